"""What an export adds for a tool call beyond its name and output: the edit as a unified
diff, a todo list as a checklist, an image's note, and the subagent it started (nested).

Plain text out: `exporting` makes it inert Markdown or renders it into the HTML page.
"""

from __future__ import annotations

import difflib

from ...models import Session
from ...selectors.family import subagents_of
from ...selectors.subagents import call_subagent
from ...transcript import Image, ToolCall, Turn, build_turns

DIFF_LINES = 2_000  # an edit's unified diff is cut here in the Markdown export
TODO_MARKS = {"completed": "[x]", "in_progress": "[~]"}


def diff_text(path: str, old: str, new: str) -> str:
    """The edit as a unified diff (cut at `DIFF_LINES` lines)."""
    # `a/home/x`, as `git diff` names an absolute path: never `a//home/x`.
    name = path.lstrip("/")
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"a/{name}", f"b/{name}", lineterm="", n=2
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more lines"]
    return "\n".join(lines)


def todo_text(call: ToolCall) -> str:
    """The todo list as a Markdown checklist: `- [x]` done, `- [~]` in progress."""
    return "\n".join(
        f"- {TODO_MARKS.get(status, '[ ]')} {' '.join(text.split())}"
        for status, _, text in call.todos or []
    )


def image_note(image: Image) -> str:
    return f"[image: {image.media_type}, {len(image.data) * 3 // 4 // 1024} KB]"


def with_subagents(session: Session, turns: list[Turn]) -> list[Turn]:
    """Each call that started a subagent given that subagent's turns (any layout kept)."""
    subs = subagents_of(session)
    for turn in turns:
        for item in turn.items:
            call = item.tool
            if call is None or not (call.is_report or call.agent_id):
                continue
            records = call_subagent(
                session, call.line, call.index, agent_id=call.agent_id, subs=subs
            )
            call.subagent = build_turns(records, session.agent) if records else None
    return turns
