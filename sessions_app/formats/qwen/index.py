"""Qwen Code lines decoded for the index alone: only the fields it keeps, the rest skipped.

The same shortcut as `claude.index`: msgspec Structs name what the index reads, the
rest of a line (tool output, telemetry payloads) is skipped unbuilt, and a line it
is not sure of gives None, so that `qwen.parse_line` reads it whole with orjson.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..common import MAX_COUNT, MODEL_LIMIT, NO_RAW, IndexedLine, clip, decode_text, indexed_base
from ..kinds import (
    ASSISTANT,
    OTHER,
    PROMPT,
    REWIND,
    SYSTEM,
    TITLE,
    TOOL_RESULT,
    USER_OTHER,
    ParsedRecord,
)


class _Part(msgspec.Struct, gc=False):
    text: msgspec.Raw = NO_RAW  # decoded only where a user record's text is needed
    thought: Any = None
    functionResponse: msgspec.Raw = NO_RAW  # only whether it is there


class _Message(msgspec.Struct, gc=False):
    parts: list[_Part] | None = None


class _Usage(msgspec.Struct, gc=False):
    promptTokenCount: int = 0
    candidatesTokenCount: int = 0


class _Payload(msgspec.Struct, gc=False):
    customTitle: Any = None


class _Line(IndexedLine, gc=False):
    message: _Message | None = None
    model: str | None = None
    usageMetadata: _Usage | None = None
    systemPayload: msgspec.Raw = NO_RAW  # read only for a title record


_decode = msgspec.json.Decoder(_Line).decode
_decode_payload = msgspec.json.Decoder(_Payload).decode


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
    kind = OTHER
    text = title = model = None
    tokens_in = tokens_out = 0
    if raw_type == "user":
        parts = line.message.parts if line.message is not None else None
        if parts and any(p.functionResponse for p in parts):
            kind = TOOL_RESULT
        else:
            texts: list[str] = []
            for part in parts or ():
                if part.text and not part.thought:
                    piece = decode_text(part.text)
                    if piece is None:
                        return None
                    texts.append(piece)
            joined = "\n".join(texts)
            if subtype == "mid_turn_user_message" or not joined.strip():
                # Typed while a tool ran: it belongs to the running turn.
                kind = USER_OTHER
            else:
                kind = PROMPT
                text = clip(joined)
    elif raw_type == "assistant":
        kind = ASSISTANT
        model = line.model
        if model is not None and (len(model) > MODEL_LIMIT or "\x00" in model):
            return None
        usage = line.usageMetadata
        if usage is not None:
            tokens_in, tokens_out = usage.promptTokenCount, usage.candidatesTokenCount
            if not (0 <= tokens_in <= MAX_COUNT and 0 <= tokens_out <= MAX_COUNT):
                return None
    elif raw_type == "tool_result":
        kind = TOOL_RESULT
    elif raw_type == "system":
        kind = REWIND if subtype == "rewind" else SYSTEM
        if subtype == "custom_title" and line.systemPayload:
            try:
                payload = _decode_payload(line.systemPayload)
            except Exception:  # not an object: the full reader decides
                return None
            kind = TITLE
            custom = payload.customTitle
            title = clip(custom) if custom.__class__ is str else None
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
        None,
        model,
        tokens_in,
        tokens_out,
        cwd,
        branch,
        title,
    )
