"""Pieces both readers share: JSON decoding that never raises, field access.

Every field reader here returns only values each database column takes; anything
else is dropped, and noted on the record (`ParsedRecord.dropped`) for the report.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
import orjson

from .kinds import INVALID, MAX_COUNT, OTHER, TEXT_LIMIT, ParsedRecord, parse_timestamp

# The longest string each kind of field may be: its column's size, or for paths
# the OS's. Longer ones are dropped, not cut: a cut id or path names something else.
ID_LIMIT = 64  # type, subtype, uuids, timestamp, session id
MESSAGE_ID_LIMIT = 128
MODEL_LIMIT = 128
BRANCH_LIMIT = 255
PATH_LIMIT = 4096


NO_RAW = msgspec.Raw()  # a field a selective decode found absent
_decode_str = msgspec.json.Decoder(str).decode


class IndexedLine(msgspec.Struct, gc=False):
    """The fields both CLIs write the same way, for a selective decode (see `base_record`)."""

    type: str | None = None
    subtype: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    timestamp: str | None = None
    sessionId: str | None = None
    cwd: str | None = None
    gitBranch: str | None = None
    isSidechain: Any = None


BaseFields = tuple[
    str, str, str | None, str | None, str | None, str | None, datetime | None, str | None,
    str | None, str | None, bool
]  # fmt: skip


def indexed_base(line: IndexedLine) -> BaseFields | None:
    """`base_record`'s fields of a selectively decoded line; None where it would note one.

    (type, subtype, uuid, parent, logical parent, timestamp, time, session id, cwd,
    git branch, sidechain)
    """
    for value in (
        line.type,
        line.subtype,
        line.uuid,
        line.parentUuid,
        line.logicalParentUuid,
        line.timestamp,
        line.sessionId,
    ):
        if value is not None and (len(value) > ID_LIMIT or "\x00" in value):
            return None
    cwd, branch, timestamp = line.cwd, line.gitBranch, line.timestamp
    if cwd is not None and (len(cwd) > PATH_LIMIT or "\x00" in cwd):
        return None
    if branch is not None and (len(branch) > BRANCH_LIMIT or "\x00" in branch):
        return None
    time = None
    if timestamp is not None:
        time = parse_timestamp(timestamp)
        if time is None:
            return None
    return (
        line.type or "",
        line.subtype or "",
        line.uuid,
        line.parentUuid,
        line.logicalParentUuid,
        timestamp,
        time,
        line.sessionId,
        cwd,
        branch,
        line.isSidechain is True,
    )


def decode_text(raw: msgspec.Raw) -> str | None:
    """The JSON string a selective decode kept raw; None when it is no string."""
    try:
        return _decode_str(raw)
    except Exception:  # any doubt: the caller reads the whole line
        return None


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


def message_blocks(data: dict[str, Any], key: str) -> list[dict]:
    """The dict blocks under `message[key]`; a plain string is one text block."""
    message = data.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get(key)
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def string(data: dict[str, Any], key: str) -> str | None:
    """A string field, or None when missing or of another type; for reading, not storing."""
    value = data.get(key)
    return value if isinstance(value, str) else None


def note(record: ParsedRecord, field: str, why: str, value: Any) -> None:
    """Name a field the reader dropped or clamped; the line in the file stays as it is."""
    record.dropped += (entry(field, why, value),)


def entry(field: str, why: str, value: Any) -> str:
    """One `ParsedRecord.dropped` entry: the field, why, and the value cut short."""
    shown = repr(value)  # escapes NUL and control characters
    if len(shown) > 60:
        shown = shown[:59] + "…"
    return f"{field}: {why} ({shown})"


def count(record: ParsedRecord, data: dict[str, Any], key: str, where: str = "") -> int:
    """A token count in 0..MAX_COUNT: 0 when missing, dropped (and noted) when not one.

    `where` is the path of `data` in the record, for the note ("message.usage").
    """
    value = data.get(key)
    if value.__class__ is int and 0 <= value <= MAX_COUNT:
        return value
    if value is not None:
        if value.__class__ is int or value.__class__ is float:
            # orjson reads integers beyond 64 bits as floats.
            why = "not an integer" if 0 <= value <= MAX_COUNT else "out of range"
        else:
            why = "not a number"
        note(record, f"{where}.{key}" if where else key, why, value)
    return 0


def bounded(
    record: ParsedRecord, data: dict[str, Any], key: str, limit: int, where: str = ""
) -> str | None:
    """A string of at most `limit` characters without NUL; anything else is dropped and noted."""
    value = data.get(key)
    if value is None or (value.__class__ is str and len(value) <= limit and "\x00" not in value):
        return value
    note(record, f"{where}.{key}" if where else key, _string_problem(value, limit), value)
    return None


def _string_problem(value: Any, limit: int) -> str:
    if value.__class__ is not str:
        return "not a string"
    return "contains NUL" if "\x00" in value else f"longer than {limit} characters"


def clip(text: str | None) -> str | None:
    """Text kept in the database is bounded; the full line stays in the file."""
    if text is None:
        return None
    text = text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT]
    # PostgreSQL refuses NUL in text columns; the file keeps the original. Display
    # text loses nothing by the replacement, so this is not noted.
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def base_record(data: dict[str, Any]) -> ParsedRecord:
    """The fields both CLIs write the same way; the reader fills in the kind."""
    # This runs once per line of every session: the checks are written out here
    # rather than calling bounded() nine times, and a value is looked at twice
    # only once it has failed.
    get = data.get
    ids = [get(k) for k in ID_FIELDS]
    cwd, branch = get("cwd"), get("gitBranch")
    dropped: tuple[str, ...] = ()
    for n, value in enumerate(ids):
        if value is not None and not (
            value.__class__ is str and len(value) <= ID_LIMIT and "\x00" not in value
        ):
            dropped += (entry(ID_FIELDS[n], _string_problem(value, ID_LIMIT), value),)
            ids[n] = None
    raw_type, subtype, uuid, parent, logical, timestamp, session_id = ids
    time = None
    if timestamp is not None:
        # Parsed here, once, so that a bad time is named; see ParsedRecord.time.
        time = parse_timestamp(timestamp)
        if time is None:
            dropped += (entry("timestamp", _time_problem(timestamp), timestamp),)
            timestamp = None
    if cwd is not None and not (
        cwd.__class__ is str and len(cwd) <= PATH_LIMIT and "\x00" not in cwd
    ):
        dropped += (entry("cwd", _string_problem(cwd, PATH_LIMIT), cwd),)
        cwd = None
    if branch is not None and not (
        branch.__class__ is str and len(branch) <= BRANCH_LIMIT and "\x00" not in branch
    ):
        dropped += (entry("gitBranch", _string_problem(branch, BRANCH_LIMIT), branch),)
        branch = None
    return ParsedRecord(
        kind=OTHER,
        raw_type=raw_type or "",
        subtype=subtype or "",
        uuid=uuid,
        parent_uuid=parent,
        logical_parent_uuid=logical,
        timestamp=timestamp,
        time=time,
        sidechain=get("isSidechain") is True,
        session_id=session_id,
        cwd=cwd,
        git_branch=branch,
        dropped=dropped,
    )


def _time_problem(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return "not an ISO 8601 time"
    return "out of range"


ID_FIELDS = ("type", "subtype", "uuid", "parentUuid", "logicalParentUuid", "timestamp", "sessionId")
