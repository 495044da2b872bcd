"""What one record adds to a page, in order: its pieces, and whether it is its turn's prompt.

A piece's index within its record names the item it makes, on the page and in
"show all". Pure Python.
"""

from __future__ import annotations

from typing import Any

from ..formats import (
    ASSISTANT,
    COMMAND,
    COMPACT_BOUNDARY,
    COMPACT_SUMMARY,
    LOCAL_OUTPUT,
    PROMPT,
    TOOL_RESULT,
    USER_OTHER,
    Agent,
)
from ..formats.long_lines import cut_note
from ..formats.markup import read_markup
from .items import RawRecord


def starts_turn(rec: RawRecord) -> bool:
    """Whether `rec` is the prompt that starts its turn, as the index says.

    The index holds the one turn rule's answer (`Record.starts_turn`): a local
    command typed during a turn, a rewind marker or a late record of an earlier turn
    never opens a card of its own. Only records read without the index (a subagent's
    transcript shown as one conversation) fall back on their kind.
    """
    if rec.turn is None:
        return False
    if rec.starts_turn is not None:
        return rec.starts_turn
    return rec.kind in (PROMPT, COMMAND)


def pieces(rec: RawRecord, agent: Agent, show_all: bool) -> list[tuple[str, Any]]:
    """What one record adds to a page, in order: an item's index is its place here. A
    record read cut (a line past the record limit) says so after what it shows."""
    found = _pieces(rec, agent, show_all)
    if found and rec.cut_at is not None:
        found.append(("cut", cut_note(rec.cut_at, rec.length)))
    return found


def _pieces(rec: RawRecord, agent: Agent, show_all: bool) -> list[tuple[str, Any]]:
    data = rec.data
    if rec.sidechain or not isinstance(data, dict) or not rec.active:
        return [("record", rec)] if show_all else []
    if starts_turn(rec):
        return [("prompt", rec)]
    if rec.kind == ASSISTANT:
        found: list[tuple[str, Any]] = [("part", part) for part in agent.assistant_parts(data)]
        if agent.results_in_reply:  # Gemini CLI: each call holds its result
            found.extend(("result", outcome) for outcome in agent.tool_results(data))
        return found
    if rec.kind == TOOL_RESULT:
        return [("result", outcome) for outcome in agent.tool_results(data)]
    if rec.kind == COMPACT_BOUNDARY:
        return [("boundary", agent.compaction_of(data))]
    if rec.kind == COMPACT_SUMMARY:
        summary = agent.record_text(data)
        if rec.raw_type != "compacted":
            return [("summary", summary)]
        # Codex's `compacted` line is the boundary and the summary at once.
        return [("boundary", agent.compaction_of(data)), ("summary", summary)]
    if rec.kind == USER_OTHER and (context := agent.context_of(data)) is not None:
        return [("context", context)]
    if rec.kind in (USER_OTHER, LOCAL_OUTPUT, PROMPT, COMMAND):
        text = agent.record_text(data) or str(data.get("content") or "")
        return [("note", text)] if text.strip() else []
    return [("record", rec)] if show_all else []


def is_command(prompt: str) -> bool:
    """Whether a prompt is a slash command (what follows it is what it expanded to)."""
    return "</command-name>" in prompt[:2000] and read_markup(prompt[:2000]).command is not None
