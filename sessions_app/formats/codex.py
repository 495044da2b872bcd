"""Codex CLI rollout lines (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).

Shapes, by release:
- 0.3x and later (the envelope): `{timestamp, [ordinal,] type, payload}` with `type` one of
  `session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`, `world_state`
  (0.169).
- releases of early 2025 (before the envelope): a first line `{id, timestamp, instructions}`,
  then bare response items (`{type: "message", role, content}`) and `{record_type: "state"}`.

The turn rule for Codex: a turn starts at a `response_item` user message that is not text
Codex injected itself (`<environment_context>`, `<user_instructions>`, AGENTS.md ...); in a
file with `event_msg` `user_message` events, only one such an event confirms (`codex_order`).
The `event_msg` `user_message` echoes the same prompt for the CLI's screen and is bookkeeping:
the response items are the history `codex resume` sends to the model, so a cut at a turn
boundary is a cut in that history. Codex writes no uuid chain: `codex_order` chains the
lines by their order and turns a rollback event into an abandoned branch.
"""

from __future__ import annotations

import re
from typing import Any

from . import (
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
from .agent import LAST_RECORD, Agent, AssistantPart, PrefixFork, ToolOutcome
from .codex_context import context_of
from .codex_order import LineChain
from .codex_tools import call_part, data_image, outcome_of
from .codex_usage import CodexUsage, codex_usage
from .codex_writing import (
    TURN_OPENING,
    dated_folder,
    fork_meta_line,
    fork_refusal,
    later_meta_line,
    new_thread_id,
    rollout_name,
    title_line,
)
from .common import MODEL_LIMIT, base_record, bounded, clip, load, note
from .running import codex_run_args

# User-role text Codex writes itself: context for the model, never a person's prompt.
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<user_action>",
    "<subagent_notification>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
ENV_CWD_RE = re.compile(r"<cwd>([^<\n]+)</cwd>")
IMAGE_TAG_RE = re.compile(r"\A\s*</?image\b[^>\n]{0,200}>\s*\Z")
RESPONSE_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "compaction",
        "ghost_snapshot",
    }
)
ASSISTANT_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)


def payload_of(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(envelope type, payload) of a line in either shape; a bare item is a response item."""
    payload = data.get("payload")
    if isinstance(payload, dict) and isinstance(data.get("type"), str):
        return data["type"], payload
    if data.get("type") in RESPONSE_TYPES:
        return "response_item", data  # before the envelope
    if "record_type" in data:
        return "state", data
    if "id" in data and "instructions" in data:
        return "session_meta", data  # the first line before the envelope
    return str(data.get("type") or ""), {}


def message_text(message: Any) -> str:
    """The text parts of a response item message, joined."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        b["text"]
        for b in content
        if isinstance(b, dict)
        and isinstance(b.get("text"), str)
        # The `<image>`/`</image>` parts around a pasted image frame it for the model: the
        # page draws the image itself.
        and not IMAGE_TAG_RE.match(b["text"])
    ]
    return "\n".join(texts)


def is_injected(text: str) -> bool:
    """Whether user-role text is context Codex added, not a prompt."""
    return text.lstrip().startswith(INJECTED_PREFIXES)


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


def record_text(data: dict[str, Any]) -> str:
    """The text a record shows: a message's text, a compaction's summary, an abort's reason."""
    kind, payload = payload_of(data)
    if kind == "compacted":
        message = payload.get("message")
        if isinstance(message, str) and message.strip():
            return message
        # Remote compaction (every public `compacted` line): `message` is "" and the
        # summary is an encrypted item only the model can read; say so, not nothing.
        said = compaction_of(data)
        return f"({said[:1].upper()}{said[1:]}: Codex keeps it for the model alone.)"
    if kind == "event_msg" and payload.get("type") == "turn_aborted":
        reason = payload.get("reason")
        return f"Turn aborted ({reason})" if isinstance(reason, str) else "Turn aborted"
    if kind == "event_msg" and payload.get("type") == "thread_rolled_back":
        return f"Rolled back {payload.get('num_turns')} turn(s)"
    return message_text(payload) if payload.get("type") == "message" else ""


def content_blocks(data: dict[str, Any]) -> list[dict]:
    """The content blocks of a message item."""
    _, payload = payload_of(data)
    content = payload.get("content")
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def image_of(block: dict[str, Any]) -> tuple[str, str] | None:
    """(media type, base64 data) of an `input_image` block holding a data URL."""
    return data_image(block)


def assistant_parts(data: dict[str, Any]) -> list[AssistantPart]:
    """A reply's text, a reasoning summary (encrypted reasoning: "hidden"), or one tool call."""
    _, item = payload_of(data)
    item_type = item.get("type")
    if item_type == "message":
        text = message_text(item)
        return [AssistantPart("text", text)] if text else []
    if item_type == "reasoning":
        summary = item.get("summary")
        texts = [
            s["text"]
            for s in (summary if isinstance(summary, list) else [])
            if isinstance(s, dict) and isinstance(s.get("text"), str)
        ]
        if not texts:
            # Plain reasoning (`reasoning_text` parts, no summary): the words themselves.
            content = item.get("content")
            texts = [
                c["text"]
                for c in (content if isinstance(content, list) else [])
                if isinstance(c, dict) and isinstance(c.get("text"), str)
            ]
        if texts:
            return [AssistantPart("thinking", "\n\n".join(texts))]
        if item.get("encrypted_content"):
            return [AssistantPart("thinking", "(hidden: the reasoning is encrypted)")]
        return []
    part = call_part(item)
    return [part] if part is not None else []


def tool_results(data: dict[str, Any]) -> list[ToolOutcome]:
    """The output of a function or custom tool call."""
    _, item = payload_of(data)
    outcome = outcome_of(item)
    return [outcome] if outcome is not None else []


def injected_context(data: dict[str, Any]) -> tuple[str, str] | None:
    """(what it is, what it says) of a message Codex wrote for the model, not a prompt."""
    _, item = payload_of(data)
    if item.get("type") != "message" or item.get("role") not in ("user", "developer"):
        return None
    text = message_text(item)
    role = str(item.get("role"))
    if not text.strip() and any(image_of(b) for b in content_blocks(data)):
        # 0.5x `view_image`: the image alone, in the user's name, for the model to see.
        return "An image Codex showed the model (view_image)", ""
    if not text.strip() or (role == "user" and not is_injected(text) and "<" not in text[:3]):
        return None
    # One message may hold several blocks, a part each (Codex Desktop sends sandbox rules,
    # app context, collaboration mode, skills and plugins as one developer message).
    parts = [
        b for b in content_blocks(data) if isinstance(b.get("text"), str) and b["text"].strip()
    ]
    found = [context_of(b["text"], role) for b in parts] if len(parts) > 1 else []
    if not found or any(f is None for f in found):
        return context_of(text, role)
    known = [f for f in found if f is not None]
    label = "; ".join(dict.fromkeys(label for label, _ in known))
    return label, "\n\n".join(f"[{label}]\n{body}" for label, body in known)


def compaction_of(data: dict[str, Any]) -> str:
    """What a compaction says of its summary: encrypted for the model alone, or nothing
    when the `compacted` line holds the summary as text."""
    kind, payload = payload_of(data)
    if kind != "compacted":
        return "the summary is encrypted"  # a `compaction` item: encrypted_content only
    message = payload.get("message")
    if isinstance(message, str) and message.strip():
        return ""
    history = payload.get("replacement_history")
    encrypted = any(
        isinstance(item, dict) and item.get("encrypted_content")
        for item in (history if isinstance(history, list) else [])[-50:]
    )
    return "the summary is encrypted" if encrypted else "no summary was written"


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
    can_rewind=True,  # as Claude's: see services/branching/rewinding_prefix
    context_of=injected_context,
)
