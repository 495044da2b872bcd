"""Qwen Code session lines (`~/.qwen/projects/<id>/chats/<id>.jsonl`)."""

from __future__ import annotations

from typing import Any

from . import (
    ASSISTANT,
    PROMPT,
    REWIND,
    SYSTEM,
    TITLE,
    TOOL_RESULT,
    USER_OTHER,
    ParsedRecord,
)
from .common import MODEL_LIMIT, base_record, bounded, clip, count, load, note, string


def message_text(message: Any) -> str:
    """The text parts of a Gemini-style message (thoughts left out), joined."""
    if not isinstance(message, dict):
        return ""
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    texts = [
        p["text"]
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    ]
    return "\n".join(texts)


def _has_function_response(message: Any) -> bool:
    parts = message.get("parts") if isinstance(message, dict) else None
    return isinstance(parts, list) and any(
        isinstance(p, dict) and "functionResponse" in p for p in parts
    )


def parse_line(raw: bytes) -> ParsedRecord:
    """Parse one Qwen Code line."""
    data = load(raw)
    if isinstance(data, ParsedRecord):
        return data
    record = base_record(data)
    raw_type = record.raw_type
    message = data.get("message")
    if raw_type == "user":
        text = message_text(message)
        if _has_function_response(message):
            record.kind = TOOL_RESULT
        elif record.subtype == "mid_turn_user_message" or not text.strip():
            # Typed while a tool ran: it belongs to the running turn.
            record.kind = USER_OTHER
        else:
            record.kind = PROMPT
            record.text = clip(text)
    elif raw_type == "assistant":
        record.kind = ASSISTANT
        record.model = bounded(record, data, "model", MODEL_LIMIT)
        usage = data.get("usageMetadata")
        if usage.__class__ is dict:
            record.input_tokens = count(record, usage, "promptTokenCount", "usageMetadata")
            record.output_tokens = count(record, usage, "candidatesTokenCount", "usageMetadata")
        elif usage is not None:
            note(record, "usageMetadata", "not an object", usage)
    elif raw_type == "tool_result":
        record.kind = TOOL_RESULT
    elif raw_type == "system":
        record.kind = REWIND if record.subtype == "rewind" else SYSTEM
        payload = data.get("systemPayload")
        if record.subtype == "custom_title" and isinstance(payload, dict):
            record.kind = TITLE
            record.title = clip(string(payload, "customTitle"))
    return record
