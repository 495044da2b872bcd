"""Writing session lines the way the CLIs do: pure functions over bytes.

A record copied into a new session keeps every byte except `sessionId` (the new
id) and an added `forkedFrom` (Claude Code's `/branch` and Qwen Code's own fork
do exactly this). The fast path edits the bytes in place, so everything else in
the line stays byte-identical; a line it cannot edit safely is parsed and
re-serialised instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import msgspec
import orjson

SESSION_KEY = b'"sessionId"'
UNCHANGED = -2  # `restamp_into`: the line was copied as it is
FORKED_KEY = b'"forkedFrom"'


@lru_cache(maxsize=64)
def _needle(session_id: str) -> bytes:
    return b'"sessionId":"' + session_id.encode() + b'"'


def _split_newline(line: bytes) -> tuple[bytes, bytes]:
    body = line.rstrip(b"\r\n")
    return body, line[len(body) :]


@lru_cache(maxsize=64)
def _forked_head(source_id: str) -> bytes:
    return b',"forkedFrom":{"sessionId":"' + source_id.encode() + b'","messageUuid":"'


def _forked_suffix(source_id: str, message_uuid: str) -> bytes:
    return _forked_head(source_id) + message_uuid.encode() + b'"}}'


def id_member(session_id: str) -> bytes:
    """`"sessionId":"<id>"` as the CLIs write it (compact)."""
    return _needle(session_id)


def forked_member(source_id: str, message_uuid: str) -> bytes:
    """What `restamp` puts in place of a record's last `}`: `forkedFrom`, and the `}`."""
    return _forked_suffix(source_id, message_uuid)


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
    pieces: list[bytes | memoryview] = []
    restamp_into(
        pieces.append,
        line,
        source_id=source_id,
        new_id=new_id,
        message_uuid=message_uuid,
        reversible=reversible,
    )
    return b"".join(pieces)


def restamp_into(
    write: Callable[[bytes | memoryview], object],
    line: bytes,
    *,
    source_id: str,
    new_id: str,
    message_uuid: str | None,
    reversible: bool = False,
) -> int:
    """`restamp`, handing the pieces to `write` so that a long line is never copied.

    Returns where the new `"sessionId":"<id>"` starts in the written line when the
    line was edited on its bytes at its proven top-level key (`top_level_id_at`):
    then the line is its source with only that id changed and, with `message_uuid`,
    `forkedFrom` added before its last `}`. `UNCHANGED` when the line names no session
    and gets no `forkedFrom` (bookkeeping such as file-history snapshots): copied as it
    is. Otherwise -1 (parsed and re-serialised, or, with `reversible`, carried through
    unchanged).
    """
    end = len(line)
    while end and line[end - 1] in b"\r\n":
        end -= 1
    # A backup keeps a missing final newline missing, so that undo is exact.
    newline = line[end:] or (b"" if reversible else b"\n")
    needle = _needle(source_id)
    # Claude Code writes the record's own `sessionId` after everything nested in it
    # (message, tool results), Qwen Code and older Claude Code before: the last
    # `"sessionId"` key in the line is the record's when `top_level_id_at` proves it.
    at = line.rfind(SESSION_KEY, 0, end)
    if (
        at >= 0
        and line.startswith(needle, at)
        and line[end - 1] == 0x7D  # "}"
        and line.find(FORKED_KEY, at, end) == -1
        and (reversible or top_level_id_at(line, at, end, needle))
    ):
        view = memoryview(line)
        write(view[:at])
        write(_needle(new_id))
        if message_uuid:
            write(view[at + len(needle) : end - 1])
            write(_forked_suffix(source_id, message_uuid))
        else:
            write(view[at + len(needle) : end])
        write(newline)
        return at
    if reversible:
        write(line)
        return -1
    if at < 0 and not message_uuid and line.find(b"\\u", 0, end) == -1:
        # No key can spell `sessionId` (not plainly, and no escape): nothing to change.
        write(line if line[end:] else line + newline)
        return UNCHANGED
    try:
        data = orjson.loads(line[:end])
    except orjson.JSONDecodeError:
        write(line)
        return -1
    if not isinstance(data, dict):
        write(line)
        return -1
    if "sessionId" in data:
        data["sessionId"] = new_id
    if message_uuid:
        data["forkedFrom"] = {"sessionId": source_id, "messageUuid": message_uuid}
    write(orjson.dumps(data) + newline)
    return -1


# A byte that opens or closes an object or array, or starts an escape.
_NESTING = re.compile(rb"[{}\[\]\\]")


def top_level_id_at(line: bytes, at: int, end: int, needle: bytes) -> bool:
    """Whether the `"sessionId"` key at `at` (the line's last plain one, followed by the
    source id) is the record's own: the top-level key the reader takes, not a nested one.

    Proven on the bytes of a JSON object line ending at `end`: the key follows a `,` or
    `{` (so its quote opens a key, not a string's content), and either nothing after
    it up to the final `}` (Claude Code) or nothing before it after the opening `{`
    (Qwen Code, older Claude Code) opens or closes an object or array, or escapes a
    character: then it sits at the top level, and no escaped spelling of the key can
    follow it. A line that fits neither is parsed instead.
    """
    if line[at - 1 : at] not in (b",", b"{"):
        return False
    after = at + len(needle)
    if _NESTING.search(line, after, end - 1) is None:
        return True
    return (
        line[:1] == b"{"
        and _NESTING.search(line, 1, at) is None
        and line.find(b"\\u", after, end) == -1
    )


class _Place(msgspec.Struct):
    """The record's own working folder and branch (a selective decode: the rest is skipped)."""

    cwd: Any = None
    gitBranch: Any = None


_decode_place = msgspec.json.Decoder(_Place).decode


def moved_cwd(cwd: str, *, old_top: str, new_top: str) -> str:
    """`cwd` moved from under `old_top` to the same place under `new_top` (else as it was)."""
    if cwd == old_top:
        return new_top
    if cwd.startswith(old_top.rstrip("/") + "/"):
        return new_top.rstrip("/") + cwd[len(old_top.rstrip("/")) :]
    return cwd


def relocate(line: bytes, *, old_top: str, new_top: str, branch: str) -> bytes:
    """The line with its own `cwd` moved from under `old_top` to under `new_top` and its
    `gitBranch` (where it has one) set to `branch`; every other byte as it was.

    Both CLIs write a record's own keys before its message, so the first `"cwd":` and
    `"gitBranch":` keys are the record's; the edit is checked by decoding the result,
    and where it cannot be made on the bytes the line is parsed and written again.
    A line that is not a JSON object is carried through unchanged.
    """
    body, newline = _split_newline(line)
    try:
        place = _decode_place(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return line
    wanted: dict[str, str] = {}
    if isinstance(place.cwd, str):
        cwd = moved_cwd(place.cwd, old_top=old_top, new_top=new_top)
        if cwd != place.cwd:
            wanted["cwd"] = cwd
    if isinstance(place.gitBranch, str) and place.gitBranch != branch:
        wanted["gitBranch"] = branch
    if not wanted:
        return line
    edited = body
    for key, value in wanted.items():
        old = b'"' + key.encode() + b'":' + orjson.dumps(getattr(place, key))
        at = edited.find(old)
        if at < 0:
            break
        new = b'"' + key.encode() + b'":' + orjson.dumps(value)
        edited = edited[:at] + new + edited[at + len(old) :]
    else:
        try:
            again = _decode_place(edited)
        except (msgspec.DecodeError, msgspec.ValidationError):
            again = None
        if again is not None and all(getattr(again, k) == v for k, v in wanted.items()):
            return edited + newline
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return line  # what msgspec took, orjson refuses (a lone surrogate): left as it is
    data.update(wanted)
    return orjson.dumps(data) + (newline or b"\n")


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
