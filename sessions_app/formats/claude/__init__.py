"""Claude Code session lines (`~/.claude/projects/<dir>/<id>.jsonl`)."""

from __future__ import annotations

from typing import Any

from ..agent import NEWEST_LEAF, Agent, AssistantPart
from ..common import (
    ID_LIMIT,
    MESSAGE_ID_LIMIT,
    MODEL_LIMIT,
    base_record,
    bounded,
    clip,
    count,
    load,
    note,
    string,
)
from ..kinds import (
    ASSISTANT,
    ATTACHMENT,
    BOOKKEEPING,
    CLAUDE,
    COMMAND,
    COMPACT_BOUNDARY,
    LOCAL_OUTPUT,
    MAX_COUNT,
    PROGRESS,
    PROMPT,
    SUMMARY,
    SYSTEM,
    TITLE,
    ParsedRecord,
)
from ..record_lines import claude_title_line
from ..running import claude_run_args
from ..usage import claude_usage
from .index import parse_indexed
from .records import BOOKKEEPING_TYPES, classify_user, content_blocks, image_of, message_text
from .tools import compaction_of, subagent_prompt, subagent_step, tool_results


def parse_line(raw: bytes) -> ParsedRecord:
    """Parse one Claude Code line: the index's fields alone where that is safe, else whole."""
    record = parse_indexed(raw)
    return record if record is not None else parse_whole(raw)


def parse_whole(raw: bytes) -> ParsedRecord:
    """Parse one Claude Code line from all of its JSON; never raises."""
    data = load(raw)
    if isinstance(data, ParsedRecord):
        return data
    record = base_record(data)
    raw_type = record.raw_type
    forked = data.get("forkedFrom")
    if isinstance(forked, dict):
        record.forked_from = bounded(record, forked, "sessionId", ID_LIMIT, "forkedFrom")
    message = data.get("message")
    if raw_type == "user":
        text = message_text(message)
        record.kind = classify_user(data, text)
        if record.kind in (PROMPT, COMMAND):
            # Kept for titles and turn lists; everything else is read from the file.
            record.text = clip(text)
    elif raw_type == "assistant":
        record.kind = ASSISTANT
        if isinstance(message, dict):
            _read_assistant_message(record, message)
    elif raw_type == "system":
        record.kind = COMPACT_BOUNDARY if record.subtype == "compact_boundary" else SYSTEM
        if record.subtype == "local_command":
            record.kind = LOCAL_OUTPUT
    elif raw_type == "attachment":
        record.kind = ATTACHMENT
    elif raw_type == "progress":
        record.kind = PROGRESS
    elif raw_type == "summary":
        record.kind = SUMMARY
        record.text = clip(string(data, "summary"))
        record.leaf_uuid = bounded(record, data, "leafUuid", ID_LIMIT)
    elif raw_type == "custom-title" or raw_type == "ai-title":  # the CLI's own, or its AI's
        record.kind = TITLE
        record.title = clip(string(data, "customTitle" if raw_type[0] == "c" else "aiTitle"))
    elif raw_type in BOOKKEEPING_TYPES:
        record.kind = BOOKKEEPING
        record.leaf_uuid = bounded(record, data, "leafUuid", ID_LIMIT)
    return record


def _read_assistant_message(record: ParsedRecord, message: dict[str, Any]) -> None:
    """The message id, model and token counts of an assistant record."""
    record.message_id = bounded(record, message, "id", MESSAGE_ID_LIMIT, "message")
    model = bounded(record, message, "model", MODEL_LIMIT, "message")
    # "<synthetic>" marks messages the CLI made up itself, not a model.
    record.model = model if model and not model.startswith("<") else None
    usage = message.get("usage")
    if usage.__class__ is not dict:
        if usage is not None:
            note(record, "message.usage", "not an object", usage)
        return
    where = "message.usage"
    total = (
        count(record, usage, "input_tokens", where)
        + count(record, usage, "cache_creation_input_tokens", where)
        + count(record, usage, "cache_read_input_tokens", where)
    )
    if total > MAX_COUNT:
        note(record, where, f"input token total above {MAX_COUNT}, clamped", total)
    record.input_tokens = min(total, MAX_COUNT)
    record.output_tokens = count(record, usage, "output_tokens", where)


def record_text(data: dict[str, Any]) -> str:
    """The text of a record's message."""
    return message_text(data.get("message"))


def assistant_parts(data: dict[str, Any]) -> list[AssistantPart]:
    """Text, thinking and `tool_use` blocks of an assistant record."""
    parts: list[AssistantPart] = []
    for block in content_blocks(data):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(AssistantPart("text", block["text"]))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            parts.append(AssistantPart("thinking", block["thinking"]))
        elif kind == "tool_use":
            args = block.get("input")
            parts.append(
                AssistantPart(
                    "tool",
                    call_id=str(block.get("id") or ""),
                    name=str(block.get("name") or "tool"),
                    input=args if isinstance(args, dict) else {},
                )
            )
    return parts


AGENT: Agent = Agent(
    name=CLAUDE,
    label="Claude Code",
    cli="claude",
    home_folder=".claude",
    sessions_subfolder="",
    subagent_files=True,
    leaf_rule=NEWEST_LEAF,
    parse_line=parse_line,
    message_text=message_text,
    record_text=record_text,
    content_blocks=content_blocks,
    image_of=image_of,
    assistant_parts=assistant_parts,
    tool_results=tool_results,
    title_line=claude_title_line,
    rewind_line=None,  # the CLI writes nothing for a rewind: a rewrite after a backup
    worktree_folder=".claude/worktrees",
    file_history_folder="file-history",
    run_args=claude_run_args,
    usage_of=claude_usage,
    compaction_of=compaction_of,
    subagent_step=subagent_step,
    subagent_prompt=subagent_prompt,
)
