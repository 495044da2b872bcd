"""Writing session lines the way the CLIs do: pure functions over bytes.

A record copied into a new session keeps every byte except `sessionId` (the new
id) and an added `forkedFrom` (Claude Code's `/branch` and Qwen Code's own fork
do exactly this). The fast path edits the bytes in place, so everything else in
the line stays byte-identical; a line it cannot edit safely is parsed and
re-serialised instead.
"""

from __future__ import annotations

import re
import uuid as uuid_module
from datetime import UTC, datetime
from typing import Any

import orjson

SESSION_KEY = b'"sessionId"'
FORKED_KEY = b'"forkedFrom"'


def _needle(session_id: str) -> bytes:
    return b'"sessionId":"' + session_id.encode() + b'"'


def _split_newline(line: bytes) -> tuple[bytes, bytes]:
    body = line.rstrip(b"\r\n")
    return body, line[len(body) :] or b"\n"


def _forked_suffix(source_id: str, message_uuid: str) -> bytes:
    return (
        b',"forkedFrom":{"sessionId":"'
        + source_id.encode()
        + b'","messageUuid":"'
        + message_uuid.encode()
        + b'"}}'
    )


def restamp(
    line: bytes,
    *,
    source_id: str,
    new_id: str,
    message_uuid: str | None,
    reversible: bool = False,
) -> bytes:
    """The line as it belongs in session `new_id`, made from session `source_id`.

    With `reversible=True` a line the fast path cannot edit is returned unchanged,
    so that `unstamp` gives back the exact original bytes.
    """
    body, newline = _split_newline(line)
    needle = _needle(source_id)
    if (
        body.endswith(b"}")
        and body.count(SESSION_KEY) == 1
        and needle in body
        and FORKED_KEY not in body
    ):
        # One `sessionId` key in the whole line: it is the record's own (inside
        # a JSON string the quotes would be escaped).
        body = body.replace(needle, _needle(new_id))
        if message_uuid:
            body = body[:-1] + _forked_suffix(source_id, message_uuid)
        return body + newline
    if reversible:
        return line
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return line
    if not isinstance(data, dict):
        return line
    if "sessionId" in data:
        data["sessionId"] = new_id
    if message_uuid:
        data["forkedFrom"] = {"sessionId": source_id, "messageUuid": message_uuid}
    return orjson.dumps(data) + newline


FORKED_SUFFIX_RE = re.compile(rb',"forkedFrom":\{"sessionId":"[^"]*","messageUuid":"[^"]*"\}\}$')


def unstamp(line: bytes, *, source_id: str, new_id: str) -> bytes:
    """Undo `restamp(..., reversible=True)`: the exact original line."""
    body, newline = _split_newline(line)
    new_needle = _needle(new_id)
    if new_needle not in body:
        return line
    match = FORKED_SUFFIX_RE.search(body)
    if match:
        body = body[: match.start()] + b"}"
    return body.replace(new_needle, _needle(source_id)) + newline


def now_iso() -> str:
    """A timestamp the way the CLIs write them (`2026-01-01T00:00:00.000Z`)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def claude_title_line(*, session_id: str, title: str) -> bytes:
    """Claude Code's own `custom-title` record."""
    record = {"type": "custom-title", "customTitle": title, "sessionId": session_id}
    return orjson.dumps(record) + b"\n"


def qwen_system_line(
    *, session_id: str, parent_uuid: str | None, subtype: str, payload: dict[str, Any], base: dict
) -> bytes:
    """A Qwen Code `system` record shaped like its ChatRecordingService writes them."""
    record = {
        "uuid": str(uuid_module.uuid4()),
        "parentUuid": parent_uuid,
        "sessionId": session_id,
        "timestamp": now_iso(),
        "type": "system",
        "provenance": "system",
        "cwd": base.get("cwd", ""),
        "version": base.get("version", "unknown"),
        **({"gitBranch": base["gitBranch"]} if base.get("gitBranch") else {}),
        "subtype": subtype,
        "systemPayload": payload,
    }
    return orjson.dumps(record) + b"\n"


def qwen_title_line(*, session_id: str, parent_uuid: str | None, title: str, base: dict) -> bytes:
    """Qwen Code's title record (`system/custom_title`)."""
    payload = {"customTitle": title, "titleSource": "manual"}
    return qwen_system_line(
        session_id=session_id,
        parent_uuid=parent_uuid,
        subtype="custom_title",
        payload=payload,
        base=base,
    )


def qwen_rewind_line(
    *, session_id: str, parent_uuid: str | None, payload: dict[str, Any], base: dict
) -> bytes:
    """Qwen Code's rewind marker: resume continues from `parent_uuid`."""
    return qwen_system_line(
        session_id=session_id,
        parent_uuid=parent_uuid,
        subtype="rewind",
        payload=payload,
        base=base,
    )
