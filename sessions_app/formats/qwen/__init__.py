"""Qwen Code session lines (`~/.qwen/projects/<id>/chats/<id>.jsonl`; older releases:
`~/.qwen/tmp/<project hash>/chats/<id>.jsonl`)."""

from __future__ import annotations

import re
from typing import Any

from ..agent import LAST_RECORD, Agent, AssistantPart, ToolOutcome
from ..common import (
    MODEL_LIMIT,
    base_record,
    bounded,
    clip,
    count,
    load,
    message_blocks,
    note,
    string,
)
from ..kinds import (
    ASSISTANT,
    PROMPT,
    QWEN,
    REWIND,
    SYSTEM,
    TITLE,
    TOOL_RESULT,
    USER_OTHER,
    ParsedRecord,
)
from ..record_lines import qwen_rewind_line, qwen_title_line
from ..running import qwen_run_args
from ..usage import qwen_usage
from .index import parse_indexed


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
    """Parse one Qwen Code line: the index's fields alone where that is safe, else whole."""
    record = parse_indexed(raw)
    return record if record is not None else parse_whole(raw)


def parse_whole(raw: bytes) -> ParsedRecord:
    """Parse one Qwen Code line from all of its JSON; never raises."""
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


def record_text(data: dict[str, Any]) -> str:
    """The text of a record's message."""
    return message_text(data.get("message"))


def content_blocks(data: dict[str, Any]) -> list[dict]:
    """The parts of a record's Gemini-style `message.parts`."""
    return message_blocks(data, "parts")


def image_of(block: dict[str, Any]) -> tuple[str, str] | None:
    """(media type, base64 data) of an `inlineData` part."""
    inline = block.get("inlineData")
    if isinstance(inline, dict):
        media, payload = inline.get("mimeType"), inline.get("data")
        if isinstance(media, str) and isinstance(payload, str):
            return media, payload
    return None


def assistant_parts(data: dict[str, Any]) -> list[AssistantPart]:
    """Text, thoughts and `functionCall` parts of an assistant record."""
    parts: list[AssistantPart] = []
    for block in content_blocks(data):
        if isinstance(block.get("text"), str):
            kind = "thinking" if block.get("thought") else "text"
            parts.append(AssistantPart(kind, block["text"]))
        elif isinstance(block.get("functionCall"), dict):
            call = block["functionCall"]
            args = call.get("args")
            parts.append(
                AssistantPart(
                    "tool",
                    call_id=str(call.get("id") or ""),
                    name=str(call.get("name") or "tool"),
                    input=args if isinstance(args, dict) else {},
                )
            )
    return parts


def tool_results(data: dict[str, Any]) -> list[ToolOutcome]:
    """The `functionResponse` parts of a record."""
    outcomes: list[ToolOutcome] = []
    for block in content_blocks(data):
        response = block.get("functionResponse")
        if not isinstance(response, dict):
            continue
        body = response.get("response")
        text = body.get("output") if isinstance(body, dict) else body
        text = text if isinstance(text, str) else str(body or "")
        is_error = isinstance(body, dict) and "error" in body
        exit = _shell_exit(text) if response.get("name") == "run_shell_command" else None
        outcomes.append(ToolOutcome(str(response.get("id") or ""), text, is_error, exit=exit))
    return outcomes


SHELL_END_RE = re.compile(r"^(Exit Code|Signal): (.+)$", re.M)


def _shell_exit(text: str) -> str | None:
    """How run_shell_command ended, from the "Exit Code:" and "Signal:" lines it reports."""
    found = dict(SHELL_END_RE.findall(text[-2000:]))
    signal, code = found.get("Signal", "(none)").strip(), found.get("Exit Code", "").strip()
    if signal not in ("(none)", "null", ""):
        return f"signal {signal[:20]}"
    return code[:10] if code and code != "(none)" else None


def title_line(*, session_id: str, title: str, parent_uuid: str | None, base: dict) -> bytes:
    """Qwen Code's `system/custom_title` record, hung off the session's last record."""
    return qwen_title_line(session_id=session_id, parent_uuid=parent_uuid, title=title, base=base)


def rewind_line(
    *, session_id: str, parent_uuid: str | None, removed_turns: int, undo: bool, base: dict
) -> bytes:
    """Qwen Code's `system/rewind` record: resume continues from `parent_uuid`."""
    payload: dict[str, Any] = {"truncatedCount": removed_turns}
    if undo:
        payload["undo"] = True
    return qwen_rewind_line(
        session_id=session_id, parent_uuid=parent_uuid, payload=payload, base=base
    )


AGENT: Agent = Agent(
    name=QWEN,
    label="Qwen Code",
    cli="qwen",
    home_folder=".qwen",
    sessions_subfolder="chats",
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
    rewind_line=rewind_line,
    worktree_folder=".qwen/worktrees",
    run_args=qwen_run_args,
    usage_of=qwen_usage,
    # Releases before the `projects/` layout kept `~/.qwen/tmp/<project hash>/chats/`.
    legacy_roots=("tmp",),
)
