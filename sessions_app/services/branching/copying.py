"""Copying indexed records out of a session file, checking each against the index.

Nothing is copied by offset on trust: every record read is compared with the
index (its length and CRC-32) before a byte of it is written, and a mismatch
stops the copy (the caller re-imports and refuses). Memory stays flat: rows
stream from the database and bytes are read a large block at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, Protocol

import orjson
from django.db import connection
from zlib_ng.zlib_ng import crc32  # zlib's CRC-32, several times faster

from ...formats.shape import (
    FORK,
    REFERRING_TYPES,
    SESSION_LEVEL_TYPES,
    Row,
    fork_candidate_sql,
    needs_reference_check,
    refers_to_kept,
    wanted,
)
from ...formats.writing import restamp, restamp_into
from ...models import Record, Session
from ..archive import session_open
from ..errors import InvalidTurn, StaleIndex

FLUSH_BYTES = 4 << 20


ROW_COLUMNS = (
    'line, "offset", length, uuid, active, sidechain, turn, raw_type, digest, '
    'parent_uuid, logical_parent_uuid, kind, "timestamp", text, starts_turn'
)
# What the copy and the byte read-back need: no times, and text only where a turn starts.
LIGHT_COLUMNS = ROW_COLUMNS.replace('"timestamp"', "NULL").replace(
    "text", "CASE WHEN starts_turn THEN text ELSE '' END"
)


def rows(
    session: Session,
    *,
    after_turn: int | None = None,
    fork_only: bool = False,
    light: bool = False,
) -> Iterator[Row]:
    """The session's records in file order; with `after_turn`, none that lies past it;
    with `fork_only`, only rows a fork may keep (see `fork_candidate_sql`); `light`:
    without times, and with text only where a turn starts."""
    table = Record._meta.db_table
    columns = LIGHT_COLUMNS if light else ROW_COLUMNS
    sql = f"SELECT {columns} FROM {table} WHERE session_id = %s"  # noqa: S608 (names are ours)
    params: list = [session.pk]
    if fork_only:
        condition, types = fork_candidate_sql()
        sql += f" AND {condition}"
        params += types
    if after_turn is not None:
        # Records past the cut are never kept, except session-wide bookkeeping.
        types = sorted(SESSION_LEVEL_TYPES)
        sql += (
            f" AND (turn IS NULL OR turn <= %s OR raw_type IN ({', '.join(['%s'] * len(types))}))"
        )
        params += [after_turn, *types]
    with connection.cursor() as cursor:
        cursor.execute(sql + " ORDER BY line", params)
        while batch := cursor.fetchmany(5_000):
            for values in batch:
                yield Row._make(values)


class RecordReader:
    """Reads indexed records by offset, a large block at a time, and checks each."""

    BLOCK = 4 << 20

    def __init__(self, f: BinaryIO, path: str) -> None:
        self.f = f
        self.path = path
        self.start = 0
        self.block = b""

    def read(self, row: Row) -> bytes:
        """The record's bytes; `StaleIndex` when they are not what the index says."""
        start = row.offset - self.start
        if start >= 0 and start + row.length <= len(self.block):
            raw = self.block[start : start + row.length]
        else:
            self.f.seek(row.offset)
            self.start = row.offset
            self.block = self.f.read(max(row.length, self.BLOCK))
            raw = self.block[: row.length]
        if len(raw) != row.length or crc32(raw) != row.digest:
            raise StaleIndex(self.path)
        return raw


class Out(Protocol):
    """Where copied lines go: a binary file, or anything that writes bytes like one."""

    def write(self, data: bytes | bytearray, /) -> int: ...


class LineLog(Protocol):
    """Takes note of each line written: its source row, and the length and CRC-32 written."""

    def add(self, row: Row, length: int, digest: int, at: int = -1) -> None: ...


def write_kept(
    session: Session,
    out: Out,
    *,
    cut: int,
    mode: str,
    new_id: str | None,
    log: LineLog | None = None,
    edit: Callable[[bytes], bytes] | None = None,
    lines: frozenset[int] | None = None,
) -> str:
    """Stream the records kept by a cut after turn `cut` into `out`; returns the last kept uuid.

    With `new_id` each line is restamped into that session (a fork); without, it
    is copied unchanged (a rewind of the same session). With `log`, each line's
    length and CRC-32 are taken from the bytes written, for the new index. `edit`
    changes each restamped line further (a fork into another folder). `lines`: the
    records to keep are these (a branch an in-CLI rewind left, brought back), not the
    active branch's up to the cut; bookkeeping follows them as usual.
    """
    # Bookkeeping refers to prompts (a file-history snapshot's `messageId`), and
    # may come before the prompt it names: the prompts kept are known up front.
    kept = kept_prompts(session, cut=cut, lines=lines)
    last_uuid = None
    source_id = str(session.session_id)
    # Pieces gather in a buffer written out in large blocks: one write call per
    # piece would cost more than copying the bytes.
    pending = bytearray()
    write = pending.extend
    with session_open(session) as src:
        reader = RecordReader(src, session.path)
        candidates = rows(
            session,
            after_turn=cut if lines is None else None,
            fork_only=mode == FORK and lines is None,
            light=log is not None,
        )
        for row in candidates:
            if lines is not None:
                if not (row.line in lines if row.uuid and not row.sidechain else bookkeeping(row)):
                    continue
            elif not wanted(row, cut=cut, mode=mode):
                continue
            raw = reader.read(row)
            if needs_reference_check(row) and not refers_to_kept(raw, kept):
                continue
            if row.uuid and not row.sidechain:
                last_uuid = row.uuid
            start = len(pending)
            at = -1
            if new_id is None:
                write(raw if raw.endswith(b"\n") else raw + b"\n")
            elif edit is not None:
                line = restamp(
                    raw, source_id=source_id, new_id=new_id, message_uuid=row.uuid or None
                )
                write(edit(line))
            else:
                at = restamp_into(
                    write, raw, source_id=source_id, new_id=new_id, message_uuid=row.uuid or None
                )
            if log is not None:
                with memoryview(pending) as view:
                    log.add(row, len(pending) - start, crc32(view[start:]), at)
            if len(pending) >= FLUSH_BYTES:
                out.write(pending)
                pending.clear()
    out.write(pending)
    if last_uuid is None:
        raise InvalidTurn(f"nothing to keep from session {session.session_id} at that turn")
    return last_uuid


def bookkeeping(row: Row) -> bool:
    """Whether a row is bookkeeping that may follow the records it names (checked on its bytes)."""
    return not row.uuid and not row.sidechain and row.raw_type in REFERRING_TYPES


def kept_prompts(session: Session, *, cut: int, lines: frozenset[int] | None = None) -> set[str]:
    """The uuids of the user records a cut after turn `cut` keeps (what bookkeeping names);
    with `lines`, those among these lines."""
    records = session.records.filter(raw_type="user", sidechain=False).exclude(uuid="")
    if lines is not None:
        pairs = records.values_list("line", "uuid").iterator(chunk_size=5000)
        return {uuid for line, uuid in pairs if line in lines}
    chosen = records.active().through(cut)
    return set(chosen.exclude(uuid="").values_list("uuid", flat=True).iterator(chunk_size=5000))


def intended_prompts(session: Session, *, cut: int) -> list[str]:
    """The (bounded) prompt text of turns 1..cut, as the index holds them."""
    return list(
        session.records.turn_starts().through(cut).order_by("line").values_list("text", flat=True)
    )


def read_record(session: Session, offset: int, length: int, digest: int) -> bytes:
    """One record's bytes, checked against the index (`StaleIndex` when they differ)."""
    return next(read_records(session, [(offset, length, digest)]))


def read_records(session: Session, rows: Iterable[tuple[int, int, int]]) -> Iterator[bytes]:
    """The bytes of records given as (offset, length, digest), the file opened once, each
    checked against the index (`StaleIndex` when one differs)."""
    with session_open(session) as f:
        for offset, length, digest in rows:
            f.seek(offset)
            raw = f.read(length)
            if len(raw) != length or crc32(raw) != digest:
                raise StaleIndex(session.path)
            yield raw


def base_fields(session: Session) -> dict:
    """cwd, version and gitBranch as the session's own records carry them."""
    row = (
        session.records.active()
        .exclude(uuid="")
        .order_by("-line")
        .values_list("offset", "length", "digest")
        .first()
    )
    if row is None:
        return {"cwd": session.cwd}
    try:
        data = orjson.loads(read_record(session, *row))
    except orjson.JSONDecodeError:
        return {"cwd": session.cwd}
    return {k: data.get(k) for k in ("cwd", "version", "gitBranch") if data.get(k)}
