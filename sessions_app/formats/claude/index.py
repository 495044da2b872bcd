"""Claude Code lines decoded for the index alone: only the fields it keeps, the rest skipped.

The msgspec Structs below name what the index reads from a line; every other value
(tool output, thinking, file snapshots: most of a line's bytes) is skipped without
being built into Python objects. This is a shortcut, not a second reader: a line it
is not sure of (not a JSON object, a field of an unexpected type, any value the full
reader would drop or note) gives None, and `claude.parse_line` reads the whole line
with orjson as before, so what is stored and reported never depends on the path.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..common import (
    ID_LIMIT,
    MESSAGE_ID_LIMIT,
    MODEL_LIMIT,
    NO_RAW,
    IndexedLine,
    clip,
    decode_text,
    indexed_base,
)
from ..kinds import (
    ASSISTANT,
    ATTACHMENT,
    BOOKKEEPING,
    COMMAND,
    COMPACT_BOUNDARY,
    LOCAL_OUTPUT,
    MAX_COUNT,
    OTHER,
    PROGRESS,
    PROMPT,
    SUMMARY,
    SYSTEM,
    TITLE,
    ParsedRecord,
)
from .records import BOOKKEEPING_TYPES, user_kind


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    text: msgspec.Raw = NO_RAW  # decoded only where a user record's text is needed


class _Usage(msgspec.Struct, gc=False):
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0


class _Message(msgspec.Struct, gc=False):
    content: str | list[_Block] | None = None
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None


class _Line(IndexedLine, gc=False):
    isMeta: Any = None
    isCompactSummary: Any = None
    toolUseResult: msgspec.Raw = NO_RAW  # only whether it is there
    turnOrigin: Any = None
    promptSource: Any = None
    message: _Message | None = None
    summary: Any = None
    customTitle: Any = None
    aiTitle: Any = None
    leafUuid: Any = None  # checked only where the record type reads it
    forkedFrom: Any = None


_decode = msgspec.json.Decoder(_Line).decode


def parse_indexed(raw: bytes) -> ParsedRecord | None:
    """The record of one line from the fields the index needs; None: read it whole instead."""
    try:
        line = _decode(raw)
    except Exception:  # anything unusual: the full reader decides
        return None
    base = indexed_base(line)
    if base is None:
        return None
    raw_type, subtype, uuid, parent, logical, timestamp, time, session_id, cwd, branch, side = base
    forked_from = None
    forked = line.forkedFrom
    if forked.__class__ is dict:
        forked_from = forked.get("sessionId")
        if forked_from is not None and not _storable_id(forked_from):
            return None
    kind = OTHER
    text = title = leaf = message_id = model = None
    tokens_in = tokens_out = 0
    message = line.message
    if raw_type == "user":
        found = _user(line, message)
        if found is None:
            return None
        kind, text = found
    elif raw_type == "assistant":
        kind = ASSISTANT
        if message is not None:
            message_id, model = message.id, message.model
            if message_id is not None and (
                len(message_id) > MESSAGE_ID_LIMIT or "\x00" in message_id
            ):
                return None
            if model is not None:
                if len(model) > MODEL_LIMIT or "\x00" in model:
                    return None
                # "<synthetic>" marks messages the CLI made up itself, not a model.
                if not model or model.startswith("<"):
                    model = None
            usage = message.usage
            if usage is not None:
                tokens_in = (
                    usage.input_tokens
                    + usage.cache_creation_input_tokens
                    + usage.cache_read_input_tokens
                )
                tokens_out = usage.output_tokens
                if not (
                    0 <= usage.input_tokens <= MAX_COUNT
                    and 0 <= usage.cache_creation_input_tokens <= MAX_COUNT
                    and 0 <= usage.cache_read_input_tokens <= MAX_COUNT
                    and 0 <= tokens_out <= MAX_COUNT
                    and tokens_in <= MAX_COUNT
                ):
                    return None
    elif raw_type == "system":
        kind = COMPACT_BOUNDARY if subtype == "compact_boundary" else SYSTEM
        if subtype == "local_command":
            kind = LOCAL_OUTPUT
    elif raw_type == "attachment":
        kind = ATTACHMENT
    elif raw_type == "progress":
        kind = PROGRESS
    elif raw_type == "summary":
        kind = SUMMARY
        summary = line.summary
        text = clip(summary) if summary.__class__ is str else None
        leaf = line.leafUuid
        if leaf is not None and not _storable_id(leaf):
            return None
    elif raw_type == "custom-title" or raw_type == "ai-title":
        kind = TITLE
        custom = line.customTitle if raw_type == "custom-title" else line.aiTitle
        title = clip(custom) if custom.__class__ is str else None
    elif raw_type in BOOKKEEPING_TYPES:
        kind = BOOKKEEPING
        leaf = line.leafUuid
        if leaf is not None and not _storable_id(leaf):
            return None
    return ParsedRecord(
        kind,
        raw_type,
        subtype,
        uuid,
        parent,
        logical,
        timestamp,
        time,
        side,
        session_id,
        text,
        message_id,
        model,
        tokens_in,
        tokens_out,
        cwd,
        branch,
        title,
        leaf,
        forked_from,
    )


def _user(line: _Line, message: _Message | None) -> tuple[str, str | None] | None:
    """The kind of a user record and its kept text; None when a text block is not a string."""
    content = message.content if message is not None else None
    blocks = content if isinstance(content, list) else ()
    tool_result = bool(line.toolUseResult) or any(b.type == "tool_result" for b in blocks)
    compact, meta = line.isCompactSummary, line.isMeta
    origin = line.turnOrigin
    if origin.__class__ is not str or not origin:
        origin = line.promptSource if line.promptSource.__class__ is str else None
    # The text is only read where the shape alone does not decide.
    text = ""
    if not (compact or tool_result or meta):
        if isinstance(content, str):
            text = content
        elif blocks:
            parts: list[str] = []
            for block in blocks:
                if block.type == "text" and block.text:
                    part = decode_text(block.text)
                    if part is None:
                        return None
                    parts.append(part)
                elif block.type == "image":
                    parts.append("[image]")
            text = "\n".join(parts)
    kind = user_kind(
        compact=bool(compact), tool_result=tool_result, meta=bool(meta), origin=origin, text=text
    )
    # Kept for titles and turn lists; everything else is read from the file.
    return kind, (clip(text) if kind in (PROMPT, COMMAND) else None)


def _storable_id(value: Any) -> bool:
    return value.__class__ is str and len(value) <= ID_LIMIT and "\x00" not in value
