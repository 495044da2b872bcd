"""Writing Codex rollouts: a fork is a prefix of its source's file under a new first line, pure.

Checked against the real `codex` 0.169 (`tests/compat/test_codex_fork_compat.py`): a file
`sessions/YYYY/MM/DD/rollout-<time>-<new id>.jsonl` whose `session_meta` names the new id
(`id`, `session_id`) and where it came from (`forked_from_id`,
`forked_from_ordinal_exclusive`: the number of lines copied), followed by the source's
lines through the cut unchanged (their `ordinal`s too), is found by `codex exec resume <new
id>` by scanning and resumed with exactly those turns, its parent present or not. Codex's
own 0.169 fork copies nothing (`history_base` points into the parent's bytes), so it dies
with its parent; this copy is self-contained. The cut lies where Codex's own
`thread/revert` cuts: before the `task_started` (and `turn_context`) that opens the next
turn. Codex keeps thread names in its own databases, never in the rollout: no title line.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime

import orjson

from ..kinds import is_session_id
from ..record_lines import qwen_title_line

# Records Codex writes to open a turn before its prompt: a cut leaves them out.
TURN_OPENING = frozenset({("event_msg", "task_started"), ("turn_context", "")})


def new_thread_id(now: datetime) -> str:
    """A UUIDv7 as Codex makes thread ids: the time in milliseconds, then random bits."""
    raw = bytearray(int(now.timestamp() * 1000).to_bytes(6, "big") + secrets.token_bytes(10))
    raw[6] = (raw[6] & 0x0F) | 0x70
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


def dated_folder(now: datetime) -> str:
    """The `YYYY/MM/DD` folder Codex files a rollout made at `now` in."""
    return now.strftime("%Y/%m/%d")


def rollout_name(session_id: str, now: datetime) -> str:
    """Codex's canonical file name (`codex resume` refuses any other)."""
    return f"rollout-{now.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"


def _meta(line: bytes) -> dict | None:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or data.get("type") != "session_meta":
        return None
    payload = data.get("payload")
    return data if isinstance(payload, dict) else None


def fork_refusal(meta_line: bytes, *, source_id: str) -> str:
    """Why a session whose first line is `meta_line` cannot be forked as a copy ("" if it can)."""
    data = _meta(meta_line)
    if data is None:
        return (
            "this Codex session has no session_meta first line (a release before the "
            "envelope, which codex 0.169 cannot resume); it is not forked"
        )
    payload = data["payload"]
    if "history_base" in payload:
        return (
            "this Codex session continues the history kept in another file (its "
            "history_base), which a copy of this file alone would lose; fork the session "
            "it continues instead"
        )
    if payload.get("id") != source_id:
        return "this Codex file's session_meta names another thread; it is not forked"
    return ""


def fork_meta_line(
    meta_line: bytes, *, source_id: str, new_id: str, kept_lines: int, now: datetime
) -> bytes:
    """The source's `session_meta` line as the fork's: its new id and where it came from."""
    if not is_session_id(new_id):
        raise ValueError(f"{new_id!r} is not a session id")
    data = _meta(meta_line)
    if data is None or fork_refusal(meta_line, source_id=source_id):
        raise ValueError("not a session_meta line of the source")
    stamp = now.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    payload: dict = {}
    for key, value in data["payload"].items():
        if key in ("forked_from_id", "forked_from_ordinal_exclusive"):
            continue  # the source's own lineage gives way to this fork's
        payload[key] = new_id if key in ("id", "session_id") else value
        if key == "id":
            # Where Codex's own fork writes them: right after the id.
            payload["forked_from_id"] = source_id
            payload["forked_from_ordinal_exclusive"] = kept_lines
    # The payload's `timestamp` (when the thread's history began) stays: the lines copied
    # after it are that history, and their usage is keyed by it (`codex_usage`).
    data["payload"] = payload
    if "timestamp" in data:
        data["timestamp"] = stamp
    return orjson.dumps(data) + b"\n"


def later_meta_line(line: bytes, *, new_id: str) -> bytes:
    """A later `session_meta` line of the source as the fork's: its id made the fork's.

    Codex takes a file's first `session_meta` for the thread and keeps later ones (a session
    resumed in the app, the parent's line a `thread_spawn` sub-agent or a 0.3x resume
    replays) as items it sends nothing of (`RolloutRecorder::load_rollout_items`); a copy
    that kept another thread's id in them would name two threads. Everything else stays,
    the `timestamp` of the thread they began too (`codex_usage` keys by it).
    """
    if not is_session_id(new_id):
        raise ValueError(f"{new_id!r} is not a session id")
    data = _meta(line)
    if data is None:
        return line if line.endswith(b"\n") else line + b"\n"  # not one: as it was
    payload = data["payload"]
    inner = payload.get("meta")
    meta = inner if isinstance(inner, dict) else payload
    for key in ("id", "session_id"):
        if key in meta:
            meta[key] = new_id
    return orjson.dumps(data) + b"\n"


def title_line(*, session_id: str, title: str, parent_uuid: str | None, base: dict) -> bytes:
    """Codex keeps a thread's name in its own databases, not in the rollout: its forks are
    written by `prefix_fork` with no title line, so this is never called for it."""
    return qwen_title_line(session_id=session_id, parent_uuid=parent_uuid, title=title, base=base)
