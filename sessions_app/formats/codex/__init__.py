"""Codex CLI rollout lines (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).

Shapes, by release:
- 0.3x and later (the envelope): `{timestamp, [ordinal,] type, payload}` with `type` one of
  `session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`, `world_state`
  (0.169).
- releases of early 2025 (before the envelope): a first line `{id, timestamp, instructions}`,
  then bare response items (`{type: "message", role, content}`) and `{record_type: "state"}`.

The turn rule for Codex: a turn starts at a `response_item` user message that is not text
Codex injected itself (`<environment_context>`, `<user_instructions>`, AGENTS.md ...); in a
file with `event_msg` `user_message` events, only one such an event confirms (`codex.order`).
The `event_msg` `user_message` echoes the same prompt for the CLI's screen and is bookkeeping:
the response items are the history `codex resume` sends to the model, so a cut at a turn
boundary is a cut in that history. Codex writes no uuid chain: `codex.order` chains the
lines by their order and turns a rollback event into an abandoned branch.
"""

from __future__ import annotations

import re
from typing import Any

from ..agent import LAST_RECORD, Agent, PrefixFork
from ..common import MODEL_LIMIT, base_record, bounded, clip, load, note
from ..kinds import (
    ASSISTANT,
    BOOKKEEPING,
    CODEX,
    COMPACT_BOUNDARY,
    COMPACT_SUMMARY,
    PROMPT,
    REWIND,
    SYSTEM,
    TITLE,
    TOOL_RESULT,
    USER_OTHER,
    ParsedRecord,
)
from ..running import codex_run_args
from .order import LineChain
from .texts import IMAGE_TAG_RE as IMAGE_TAG_RE
from .texts import INJECTED_PREFIXES as INJECTED_PREFIXES
from .texts import RESPONSE_TYPES as RESPONSE_TYPES
from .texts import assistant_parts as assistant_parts
from .texts import compaction_of as compaction_of
from .texts import content_blocks as content_blocks
from .texts import image_of as image_of
from .texts import injected_context as injected_context
from .texts import is_injected as is_injected
from .texts import message_text as message_text
from .texts import payload_of as payload_of
from .texts import record_text as record_text
from .texts import tool_results as tool_results
from .usage import CodexUsage, codex_usage
from .writing import (
    TURN_OPENING,
    dated_folder,
    fork_meta_line,
    fork_refusal,
    later_meta_line,
    new_thread_id,
    rollout_name,
    title_line,
)

ENV_CWD_RE = re.compile(r"<cwd>([^<\n]+)</cwd>")
ASSISTANT_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)


def parse_line(raw: bytes) -> ParsedRecord:
    """Parse one Codex line; never raises (the uuid chain is added by `LineChain`)."""
    data = load(raw)
    if isinstance(data, ParsedRecord):
        return data
    kind, payload = payload_of(data)
    record = base_record({"timestamp": data.get("timestamp")})
    record.raw_type = kind[:64]
    item_type = payload.get("type")
    record.subtype = item_type[:64] if isinstance(item_type, str) else ""
    record.kind = BOOKKEEPING
    if kind == "response_item":
        _response_item(record, payload)
    elif kind == "event_msg":
        _event(record, payload)
    elif kind == "session_meta":
        inner = payload.get("meta")
        meta: dict[str, Any] = inner if isinstance(inner, dict) else payload
        record.kind = SYSTEM
        record.session_id = bounded(record, meta, "id", 64, "payload")
        record.cwd = bounded(record, meta, "cwd", 4096, "payload")
        found = meta.get("git")
        git: dict[str, Any] = found if isinstance(found, dict) else {}
        record.git_branch = bounded(record, git, "branch", 255, "payload.git")
        record.forked_from = bounded(record, meta, "forked_from_id", 64, "payload")
        if not record.forked_from:
            # A `thread_spawn` sub-agent started without its parent's history names the
            # parent only in its `source` (0.104 CLI, Codex Desktop).
            record.forked_from = _spawned_by(record, meta)
    elif kind == "turn_context":
        record.model = bounded(record, payload, "model", MODEL_LIMIT, "payload")
    elif kind == "compacted":
        record.kind = COMPACT_SUMMARY
    return record


def _spawned_by(record: ParsedRecord, meta: dict[str, Any]) -> str | None:
    """The `parent_thread_id` of a `thread_spawn` sub-agent's `source`, if it names one."""
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    if not isinstance(spawn, dict):
        return None
    return bounded(record, spawn, "parent_thread_id", 64, "payload.source.subagent.thread_spawn")


def _response_item(record: ParsedRecord, item: dict[str, Any]) -> None:
    item_type = record.subtype
    if item_type == "message":
        role = item.get("role")
        text = message_text(item)
        if role == "assistant":
            record.kind = ASSISTANT
        elif role == "user" and text.strip() and not is_injected(text):
            record.kind = PROMPT
            record.text = clip(text)
        else:
            record.kind = USER_OTHER  # injected context, developer or system text
            if role == "user" and text.lstrip().startswith("<environment_context>"):
                # Before the envelope (Aug 2025) no line but this one names the cwd.
                found = ENV_CWD_RE.search(text[:8192])
                if found and len(found.group(1).strip()) <= 4096:
                    record.cwd = found.group(1).strip()
    elif item_type in ASSISTANT_ITEMS:
        record.kind = ASSISTANT
    elif item_type in ("function_call_output", "custom_tool_call_output"):
        record.kind = TOOL_RESULT
    elif item_type == "compaction":
        record.kind = COMPACT_BOUNDARY


def _event(record: ParsedRecord, event: dict[str, Any]) -> None:
    event_type = record.subtype
    if event_type == "thread_rolled_back":
        record.kind = REWIND
        turns = event.get("num_turns")
        if turns.__class__ is int and 0 <= turns <= 1_000_000:
            record.text = str(turns)
        else:
            note(record, "payload.num_turns", "not a turn count", turns)
    elif event_type == "user_message":
        message = event.get("message")
        # What was typed: it tells which user message before it is the prompt (`LineChain`).
        record.text = clip(message) if isinstance(message, str) else None
    elif event_type == "turn_aborted":
        record.kind = USER_OTHER
    elif event_type == "token_count":
        usage = codex_usage(event_line(event))
        if usage is not None:
            # Counted like a reply: the reader and the usage pass read assistant records,
            # once per key (a repeated event has the same running total).
            record.kind = ASSISTANT
            record.message_id = usage.key
            record.input_tokens = min(usage.input + usage.cache_read, 2**31 - 1)
            record.output_tokens = min(usage.output, 2**31 - 1)
    elif event_type == "thread_name_updated" or event_type == "thread_renamed":
        name = event.get("thread_name") or event.get("name")
        if isinstance(name, str) and name.strip():
            record.kind = TITLE
            record.title = clip(name)


def event_line(event: dict[str, Any]) -> dict[str, Any]:
    """An event payload wrapped as its line, for `codex_usage`."""
    return {"type": "event_msg", "payload": event}


AGENT: Agent = Agent(
    name=CODEX,
    label="Codex CLI",
    cli="codex",
    home_folder=".codex",
    sessions_subfolder="",
    subagent_files=False,
    leaf_rule=LAST_RECORD,
    parse_line=parse_line,
    message_text=message_text,
    record_text=record_text,
    content_blocks=content_blocks,
    image_of=image_of,
    assistant_parts=assistant_parts,
    tool_results=tool_results,
    title_line=title_line,
    rewind_line=None,
    usage_of=codex_usage,
    compaction_of=compaction_of,
    line_chain=LineChain,
    sessions_root="sessions",
    archive_root="archived_sessions",
    usage_reader=CodexUsage,
    home_variable="CODEX_HOME",
    prefix_fork=PrefixFork(
        turn_opening=TURN_OPENING,
        refusal=fork_refusal,
        meta_line=fork_meta_line,
        new_id=new_thread_id,
        folder=dated_folder,
        file_name=rollout_name,
        meta_type="session_meta",
        restamp=later_meta_line,
    ),
    run_args=codex_run_args,
    resume_word="resume",
    can_rewind=True,  # as Claude's: see services/branching/rewinding/prefix
    context_of=injected_context,
)
