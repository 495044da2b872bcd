"""A new file's archive pieces, made in a thread while the file is written or read.

A fork's bytes are compressed and digested in a thread while the file is written
(`PieceMaker`), then stored with its rows (`archive_made`), instead of the new file being
read again inside the action. A file the import reads from its start is compressed in a
thread while the import parses it (`pieces_ahead`). The pieces still hold exactly bytes
0..`bytes_imported`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

from django.db import connection

from ...models import ArchivePiece, Session
from .. import archive
from . import LEVEL, archive_enabled

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd


class PieceMaker:
    """A new file's pieces, made from its bytes as they are written: compressed and digested
    in a thread (zstd and SHA-256 let go of the GIL), so that a fork's archive costs its
    writer little more than the rows that store it (`archive_made`).

    The compressed pieces wait in a spooled temporary file (memory holds a few MB of them,
    whatever the file's size) until the fork is registered; none is stored before then.
    """

    SPOOL_BYTES = 16 << 20

    def __init__(self) -> None:
        self.enabled = archive_enabled()
        self.size = 0  # bytes handed over
        self._carry = b""  # the thread's: bytes short of a whole piece, not compressed yet
        self._made: list[tuple[int, int, int, int, str]] = []  # start, length, at, size, digest
        # Closed by `__exit__`.
        self._spool = tempfile.SpooledTemporaryFile(max_size=self.SPOOL_BYTES)  # noqa: SIM115
        self._pool = ThreadPoolExecutor(1) if self.enabled else None
        self._last: Future | None = None

    def __enter__(self) -> PieceMaker:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._spool.close()

    def add(self, data: bytes | bytearray | memoryview) -> None:
        """The next bytes of the file (copied: the caller may reuse its buffer)."""
        if self._pool is None:
            return
        block = bytes(data)
        self._last = self._pool.submit(self._take, self.size, block)
        self.size += len(block)

    def _take(self, at: int, block: bytes) -> None:
        data = self._carry + block if self._carry else block
        start = at - len(self._carry)
        whole = len(data) - len(data) % archive.PIECE_BYTES
        with memoryview(data) as view:
            for i in range(0, whole, archive.PIECE_BYTES):
                self._store(start + i, view[i : i + archive.PIECE_BYTES])
        self._carry = data[whole:]

    def _store(self, start: int, raw: memoryview | bytes) -> None:
        packed = zstd.compress(raw, level=LEVEL)
        self._made.append(
            (start, len(raw), self._spool.tell(), len(packed), hashlib.sha256(raw).hexdigest())
        )
        self._spool.write(packed)

    def pieces(self, tail: bytes) -> Iterator[tuple[int, int, bytes, str]]:
        """Every piece (start, length, compressed bytes, digest) of the bytes handed over,
        then `tail`, in order; waits for the thread."""
        if self._pool is None:
            return
        if self._last is not None:
            self._last.result()  # the thread's errors come out here
        self._pool.submit(self._take, self.size, tail).result()
        if self._carry:
            self._store(self.size + len(tail) - len(self._carry), self._carry)
            self._carry = b""
        self._spool.seek(0)
        for start, length, _at, packed, digest_ in self._made:
            yield start, length, self._spool.read(packed), digest_


def archive_made(*, session: Session, maker: PieceMaker, tail: bytes) -> bool:
    """Store the pieces `maker` made of a file the dashboard wrote, its last line `tail`
    apart (it may be written again after the rest); whether they were stored.

    The caller has read the file back against the CRC-32 of the bytes handed to `maker`,
    line by line, and holds the transaction. Pieces are stored only when they hold
    exactly the session's bytes, 0 to `bytes_imported`.
    """
    if not maker.enabled or maker.size + len(tail) != session.bytes_imported:
        return False
    # Raw, as `archive_extend` stores its pieces: a model instance per piece costs more
    # than SQLite's insert of it.
    insert = (
        f"INSERT INTO {ArchivePiece._meta.db_table} "  # noqa: S608 (ours)
        "(session_id, start, length, data, digest) VALUES (%s, %s, %s, %s, %s)"
    )
    batch: list[tuple[int, int, int, bytes, str]] = []
    with connection.cursor() as cursor:
        for start, length, data, digest_ in maker.pieces(tail):
            batch.append((session.pk, start, length, data, digest_))
            if len(batch) == 64:
                cursor.executemany(insert, batch)
                batch.clear()
        if batch:
            cursor.executemany(insert, batch)
    return True


# Pieces made ahead: (length, compressed bytes, digest) by start.
Ahead = dict[int, tuple[int, bytes, str]]
# Files at most this big are compressed ahead (memory holds their pieces until stored);
# a bigger one is compressed as the archive reads it, a piece at a time.
AHEAD_BYTES = 4 << 20
_AHEAD: list[ThreadPoolExecutor] = []
os.register_at_fork(after_in_child=_AHEAD.clear)  # a forked process has none of its threads


def pieces_ahead(f: BinaryIO, size: int) -> Future[Ahead] | None:
    """The pieces of the first `size` bytes of the open file `f`, made in a thread (zstd and
    SHA-256 let go of the GIL) while the import parses the file; None when not worth it."""
    if not archive_enabled() or not 0 < size <= AHEAD_BYTES:
        return None
    if not _AHEAD:
        _AHEAD.append(ThreadPoolExecutor(1, thread_name_prefix="archive"))
    return _AHEAD[0].submit(_ahead, os.dup(f.fileno()), size)


def _ahead(fd: int, size: int) -> Ahead:
    made: Ahead = {}
    try:
        for start in range(0, size, archive.PIECE_BYTES):
            raw = os.pread(fd, min(archive.PIECE_BYTES, size - start), start)
            made[start] = (len(raw), zstd.compress(raw, level=LEVEL), archive.digest(raw))
    finally:
        os.close(fd)
    return made
