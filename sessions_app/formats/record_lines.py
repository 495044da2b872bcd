"""The records the dashboard writes itself, shaped as each CLI writes its own: titles, rewinds."""

from __future__ import annotations

import uuid as uuid_module
from datetime import UTC, datetime
from typing import Any

import orjson


def now_iso() -> str:
    """A timestamp the way the CLIs write them (`2026-01-01T00:00:00.000Z`)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def claude_title_line(
    *, session_id: str, title: str, parent_uuid: str | None = None, base: dict | None = None
) -> bytes:
    """Claude Code's own `custom-title` record; it hangs off no record (no parent, no base)."""
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
