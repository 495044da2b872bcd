"""A Gemini CLI fork: the source's lines before the cut under a new first line, pure.

Gemini CLI replays a file line by line (`order.py`), so the lines before prompt N+1 give
back turns 1..N. The fork lies beside its source in the project's `chats/` folder, named
as the CLI names a new session (`session-<minute>-<id[:8]>.jsonl`); its first line is the
source's with the new id and `lastUpdated` now (the CLI deletes sessions whose
`lastUpdated` is old, when retention is on). Lines that would give the fork the source's
id or title (`$set` of `sessionId`, `summary`, `memoryScratchpad`, a second metadata line
a resume appended) are left out.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson

LEFT_OUT_SETS = frozenset({"sessionId", "summary", "memoryScratchpad"})


def _load(raw: bytes) -> dict[str, Any] | None:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _is_metadata(data: dict[str, Any]) -> bool:
    return isinstance(data.get("sessionId"), str) and isinstance(data.get("projectHash"), str)


def fork_refusal(meta_line: bytes, *, source_id: str) -> str:
    """Why a file cannot be forked: its first line is not its metadata naming its id."""
    data = _load(meta_line)
    if data is None or not _is_metadata(data) or "id" in data:
        return "its first line is not Gemini CLI's session metadata"
    if str(data["sessionId"]).lower() != source_id.lower():
        return "its first line names another session id"
    return ""


def _iso(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def fork_meta_line(
    meta_line: bytes, *, source_id: str, new_id: str, kept_lines: int, now: datetime
) -> bytes:
    """The source's metadata with the new id, updated now, as a main session."""
    data = _load(meta_line) or {}
    meta = {k: v for k, v in data.items() if k not in LEFT_OUT_SETS and k != "messages"}
    meta.update(sessionId=new_id, lastUpdated=_iso(now), kind="main")
    meta.setdefault("startTime", _iso(now))
    # Key order as the CLI writes it: sessionId first.
    ordered = {"sessionId": new_id, **{k: v for k, v in meta.items() if k != "sessionId"}}
    return orjson.dumps(ordered) + b"\n"


def keeps(raw: bytes) -> bool:
    """Whether a line of the source goes into the fork (see the module)."""
    data = _load(raw)
    if data is None:
        return True  # a damaged line is carried as the CLI would meet it
    if _is_metadata(data) and "id" not in data:
        return False
    changes = data.get("$set")
    return not (isinstance(changes, dict) and LEFT_OUT_SETS & changes.keys())


def new_session_id(now: datetime) -> str:
    return str(uuid.uuid4())


def no_folder(now: datetime) -> str:
    return ""  # the fork goes beside its source


def session_name(new_id: str, now: datetime) -> str:
    """`session-<YYYY-MM-DDTHH-MM>-<id[:8]>.jsonl`, the name the CLI gives a new session."""
    return f"session-{now:%Y-%m-%dT%H-%M}-{new_id[:8]}.jsonl"
