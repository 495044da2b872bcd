"""A made-up third CLI, "Fake Code": everything an agent module provides, and nothing more.

Its files lie in `<project>/threads/<id>.jsonl`; its records are shaped unlike
either real CLI's (`ask`, `answer` with `steps`, `result` with `results`, `title`),
so a test that imports, shows, forks and rewinds them proves that nothing outside
`sessions_app/formats/` needs to know about an agent. Registered by tests only.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from sessions_app.formats import (
    ASSISTANT,
    NEWEST_LEAF,
    PROMPT,
    REWIND,
    TITLE,
    TOOL_RESULT,
    Agent,
    AssistantPart,
    ParsedRecord,
    ToolOutcome,
)
from sessions_app.formats.common import base_record, clip, load
from sessions_app.formats.record_lines import now_iso

NAME = "fake"


def message_text(message: Any) -> str:
    """A record is its own message: `{"text": ...}`."""
    if not isinstance(message, dict):
        return ""
    text = message.get("text")
    return text if isinstance(text, str) else ""


def record_text(data: dict[str, Any]) -> str:
    return message_text(data)


def parse_line(raw: bytes) -> ParsedRecord:
    data = load(raw)
    if isinstance(data, ParsedRecord):
        return data
    record = base_record(data)
    if record.raw_type == "ask":
        record.kind = PROMPT
        record.text = clip(message_text(data))
    elif record.raw_type == "answer":
        record.kind = ASSISTANT
        model = data.get("model")
        record.model = model if isinstance(model, str) and len(model) <= 128 else None
    elif record.raw_type == "result":
        record.kind = TOOL_RESULT
    elif record.raw_type == "rewind":
        record.kind = REWIND
    elif record.raw_type == "title":
        record.kind = TITLE
        record.title = clip(data.get("title") if isinstance(data.get("title"), str) else None)
    return record


def content_blocks(data: dict[str, Any]) -> list[dict]:
    steps = data.get("steps")
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def image_of(block: dict[str, Any]) -> tuple[str, str] | None:
    picture = block.get("picture")
    if isinstance(picture, dict):
        media, payload = picture.get("type"), picture.get("base64")
        if isinstance(media, str) and isinstance(payload, str):
            return media, payload
    return None


def assistant_parts(data: dict[str, Any]) -> list[AssistantPart]:
    parts: list[AssistantPart] = []
    for step in content_blocks(data):
        if isinstance(step.get("say"), str):
            parts.append(AssistantPart("text", step["say"]))
        elif isinstance(step.get("think"), str):
            parts.append(AssistantPart("thinking", step["think"]))
        elif isinstance(step.get("run"), dict):
            run = step["run"]
            args = run.get("args")
            parts.append(
                AssistantPart(
                    "tool",
                    call_id=str(run.get("id") or ""),
                    name=str(run.get("tool") or "tool"),
                    input=args if isinstance(args, dict) else {},
                )
            )
    return parts


def tool_results(data: dict[str, Any]) -> list[ToolOutcome]:
    results = data.get("results")
    return [
        ToolOutcome(str(r.get("id") or ""), str(r.get("output") or ""), r.get("failed") is True)
        for r in (results if isinstance(results, list) else [])
        if isinstance(r, dict)
    ]


def title_line(*, session_id: str, title: str, parent_uuid: str | None, base: dict) -> bytes:
    return orjson.dumps({"type": "title", "title": title, "sessionId": session_id}) + b"\n"


def rewind_line(
    *, session_id: str, parent_uuid: str | None, removed_turns: int, undo: bool, base: dict
) -> bytes:
    """Only `APPENDING` (in the tests) rewinds this way; the registered AGENT rewrites."""
    record = {
        "type": "rewind",
        "uuid": str(uuid.uuid4()),
        "parentUuid": parent_uuid,
        "timestamp": now_iso(),
        "removed": removed_turns,
        "undo": undo,
        "sessionId": session_id,
    }
    return orjson.dumps(record) + b"\n"


AGENT = Agent(
    name=NAME,
    label="Fake Code",
    cli="fake",
    home_folder=".fake",
    sessions_subfolder="threads",
    subagent_files=False,
    leaf_rule=NEWEST_LEAF,
    parse_line=parse_line,
    message_text=message_text,
    record_text=record_text,
    content_blocks=content_blocks,
    image_of=image_of,
    assistant_parts=assistant_parts,
    tool_results=tool_results,
    title_line=title_line,
    rewind_line=None,  # a rewind rewrites the file after a backup, like Claude Code's
)
