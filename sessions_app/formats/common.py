"""Pieces both readers share: JSON decoding that never raises, field access."""

from __future__ import annotations

from typing import Any

import orjson

from . import INVALID, OTHER, TEXT_LIMIT, ParsedRecord


def load(raw: bytes) -> dict[str, Any] | ParsedRecord:
    """The line's JSON object, or an `invalid` record that says why it is not one."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            # Stray non-UTF-8 bytes should not hide an otherwise good record; the
            # raw bytes stay as they are in the file.
            data = orjson.loads(raw.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            text = raw.strip()
            reason = "empty line" if not text else f"not valid JSON ({exc.msg})"
            return ParsedRecord(kind=INVALID, error=reason[:250])
    if not isinstance(data, dict):
        return ParsedRecord(kind=INVALID, error=f"a JSON {type(data).__name__}, not an object")
    return data


def string(data: dict[str, Any], key: str) -> str | None:
    """A string field, or None when missing or of another type (transcripts are untrusted)."""
    value = data.get(key)
    return value if isinstance(value, str) else None


def ident(data: dict[str, Any], key: str) -> str | None:
    """An id-like field (uuid, type): None unless a short, NUL-free string."""
    value = data.get(key)
    if isinstance(value, str) and len(value) <= 64 and "\x00" not in value:
        return value
    return None


def integer(data: Any, key: str) -> int:
    """An integer field, 0 when missing or not a number."""
    if not isinstance(data, dict):
        return 0
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def clip(text: str | None) -> str | None:
    """Text kept in the database is bounded; the full line stays in the file."""
    if text is None:
        return None
    text = text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT]
    # PostgreSQL refuses NUL in text columns; the file keeps the original.
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def base_record(data: dict[str, Any]) -> ParsedRecord:
    """The fields both CLIs write the same way; the reader fills in the kind."""
    # This runs once per line of every session: the id checks are written out
    # here rather than calling ident() seven times.
    get = data.get
    ids = [get(k) for k in ID_FIELDS]
    for n, value in enumerate(ids):
        if value is not None and not (
            value.__class__ is str and len(value) <= 64 and "\x00" not in value
        ):
            ids[n] = None
    raw_type, subtype, uuid, parent, logical, timestamp, session_id = ids
    cwd, branch = get("cwd"), get("gitBranch")
    return ParsedRecord(
        kind=OTHER,
        raw_type=raw_type or "",
        subtype=subtype or "",
        uuid=uuid,
        parent_uuid=parent,
        logical_parent_uuid=logical,
        timestamp=timestamp,
        sidechain=get("isSidechain") is True,
        session_id=session_id,
        cwd=clip(cwd) if cwd.__class__ is str else None,
        git_branch=clip(branch) if branch.__class__ is str else None,
    )


ID_FIELDS = ("type", "subtype", "uuid", "parentUuid", "logicalParentUuid", "timestamp", "sessionId")
