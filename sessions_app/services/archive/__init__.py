"""The archive: branchboard's own compressed copy of every session file it indexes.

A session file's bytes are kept in `ArchivePiece` rows: zstd-compressed stretches of
the file, each with the SHA-256 of its raw bytes. The import keeps it up to date in
the file's own transaction (`archive_extend`): a file that grew adds only its new
whole lines as a new piece; a file read again from the start is stored again and its
earlier pieces go, as no index row names their bytes any more. So the pieces of a
session always hold exactly the bytes its records were indexed from, 0 to
`bytes_imported`.

A session's file-history backups are kept whole beside its pieces (`archive.files`), and so
are the files of the folder it owns beside its file (`archive.sidecars`); restore to disk
(`archive.restoring`, writing through `archive.writing`) brings every one back or names it.

`session_open` is the one reader of a session's bytes: its file while there is one,
else the archive (`ArchiveReader`, seekable). A piece whose bytes do not match its
digest raises `ArchiveCorrupt` and is never served.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import sys
from typing import BinaryIO

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.db.models import F, Max

from ...models import ArchivePiece, Session
from ..roots import open_regular
from .sizes import ArchiveSize as ArchiveSize
from .sizes import archive_ends as archive_ends
from .sizes import archive_size as archive_size

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

# Raw bytes per piece at most (256 KiB): a read by offset decompresses one piece, not the
# session, and an import holds one piece at a time, whatever the file's size.
PIECE_BYTES = 1 << 18
# zstd level: 1, the fastest of the usual ones: the 99 MB bench corpus's 256 KiB pieces in
# 0.20 s of CPU against 0.33 s at zstd's default 3, for 22.0 MB instead of 21.5 MB; higher
# levels cost the import more than they save. Any level reads back the same.
LEVEL = 1
# How long a verdict on a session's pieces is kept (seconds; `archive.health`): bytes
# rewritten in the database at the same size are noticed by the next read, or after this.
VERDICT_SECONDS = 3600


class ArchiveError(OSError):
    """The archive cannot give a session's bytes (missing or corrupted pieces)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EIO, message)


class ArchiveCorrupt(ArchiveError):
    """A piece whose bytes do not match its digest."""


def archive_enabled() -> bool:
    """Whether the import keeps the archive (BRANCHBOARD_ARCHIVE)."""
    return bool(getattr(settings, "ARCHIVE", True))


def digest(raw: bytes) -> str:
    """The digest kept with a piece: SHA-256 of its raw bytes, in hex."""
    return hashlib.sha256(raw).hexdigest()


def archived_end(session: Session) -> int:
    """The byte up to which the archive holds the session (0: nothing)."""
    end = session.archive_pieces.aggregate(end=Max(F("start") + F("length")))["end"]
    return int(end or 0)


def archive_extend(
    *,
    session: Session,
    f: BinaryIO,
    fresh: bool,
    end: int | None = None,
    ahead: dict[int, tuple[int, bytes, str]] | None = None,
) -> tuple[int, int]:
    """Bring the session's pieces up to its `bytes_imported`, reading from the open file `f`.

    `fresh`: the file was read again from the start, so its earlier pieces go first
    (even with the archive off: pieces that are not the file's bytes are never kept).
    `end`: the archived end if known (the import pass read it for every session at once).
    Returns the raw bytes added and the archived end. The caller holds the transaction.
    """
    if fresh:
        session.archive_pieces.all().delete()
    if not archive_enabled():
        return 0, 0
    end = 0 if fresh else (archived_end(session) if end is None else end)
    if end > session.bytes_imported:
        # Holds more than the index names (kept while the archive was off): again.
        session.archive_pieces.all().delete()
        end = 0
    stop = session.bytes_imported
    added = 0
    while end < stop:
        want = min(PIECE_BYTES, stop - end)
        made = (ahead or {}).get(end)
        if made is not None and made[0] == want:  # made in a thread as the import read
            length, data, sha = made
        else:
            f.seek(end)
            raw = f.read(want)
            if not raw:
                break  # the file is shorter than indexed: the next import reads it again
            length, data, sha = len(raw), zstd.compress(raw, level=LEVEL), digest(raw)
        # Stored as made: memory holds one piece, not the file. Raw: a piece of every
        # 256 KiB of every file imported, where the ORM's insert costs more than SQLite's.
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {ArchivePiece._meta.db_table} "  # noqa: S608 (ours)
                "(session_id, start, length, data, digest) VALUES (%s, %s, %s, %s, %s)",
                [session.pk, end, length, data, sha],
            )
        end += length
        added += length
    return added, end


def archive_written(*, session: Session, path: os.PathLike[str] | str) -> None:
    """Archive a file the dashboard wrote and indexed without importing it (a derived fork).

    A failure other than the database's is left for the next import pass, which archives
    any session whose archive is behind its index."""
    try:
        with open(path, "rb") as f:
            archive_extend(session=session, f=f, fresh=False, end=0)
    except DatabaseError:
        raise
    except Exception:  # noqa: S110 - the next import pass catches up
        pass


class ArchiveReader(io.RawIOBase):
    """A session's archived bytes as a seekable binary file; each piece checked as read."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session_label = str(session.session_id)
        self.pieces = list(
            session.archive_pieces.order_by("start").values_list("start", "length", "pk")
        )
        expected = 0
        for start, length, _ in self.pieces:
            if start != expected:
                raise ArchiveError(f"session {self.session_label}: the archive misses bytes")
            expected += length
        self.size = expected
        self.pos = 0
        self.current: tuple[int, bytes] | None = None  # (start, raw) of the piece held

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.pos, os.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.pos >= self.size:
            return 0
        start, raw = self._piece_at(self.pos)
        chunk = raw[self.pos - start : self.pos - start + len(buffer)]
        buffer[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)

    def _piece_at(self, pos: int) -> tuple[int, bytes]:
        if self.current is not None and self.current[0] <= pos < self.current[0] + len(
            self.current[1]
        ):
            return self.current
        for start, length, pk in self.pieces:
            if start <= pos < start + length:
                self.current = (start, piece_bytes(pk, self.session_label))
                return self.current
        raise ArchiveError(f"session {self.session_label}: no archived byte at {pos}")


def piece_bytes(pk: int, label: str = "") -> bytes:
    """One piece's raw bytes, checked against its digest; `ArchiveCorrupt` if they differ."""
    piece = ArchivePiece.objects.get(pk=pk)
    try:
        raw = zstd.decompress(bytes(piece.data))
    except zstd.ZstdError:
        raw = b""
    if len(raw) != piece.length or digest(raw) != piece.digest:
        # The pages say the archive is damaged from here without checking every piece.
        cache.set(corrupt_key(piece.session_id), (piece.pk, piece.start), VERDICT_SECONDS)
        raise ArchiveCorrupt(
            f"session {label or piece.session_id}: archived piece at byte {piece.start} "
            "is corrupted (its digest does not match); not served"
        )
    return raw


def corrupt_key(session_pk: int) -> str:
    """The cache key of the piece a read last found corrupted in a session."""
    return f"archive-corrupt:{session_pk}"


def archive_covers(session: Session) -> bool:
    """Whether the archive holds every byte the session's records were indexed from."""
    return session.bytes_imported > 0 and archived_end(session) >= session.bytes_imported


def archive_open(session: Session) -> BinaryIO:
    """The session's archived bytes, buffered (lines, seek, read)."""
    return io.BufferedReader(ArchiveReader(session), buffer_size=64 << 10)


def archive_check(session: Session) -> None:
    """Check every piece of the session against its digest; raises `ArchiveError`."""
    label = str(session.session_id)
    reader = ArchiveReader(session)
    for _, _, pk in reader.pieces:
        piece_bytes(pk, label)


def archive_bytes(session: Session) -> bytes:
    """The whole archived file, checked (tests, restore of small files)."""
    with archive_open(session) as f:
        return f.read()


def session_open(session: Session) -> BinaryIO:
    """The one way to read a session's bytes: its file, or the archive once the file is gone.

    Raises what `open_regular` raises (`UnsafePath`, `OSError`) when there is a file
    problem other than its absence, and `FileNotFoundError` when the file is gone and
    the archive does not hold the session whole.
    """
    try:
        return open_regular(session.path, root=session.project.root)
    except FileNotFoundError:
        if not archive_covers(session):
            raise
    return archive_open(session)


def from_archive(f: BinaryIO) -> bool:
    """Whether `f`, from `session_open`, reads the archive rather than the file."""
    return isinstance(getattr(f, "raw", None), ArchiveReader)


def session_readable(session: Session) -> bool:
    """Whether `session_open` can give the session's bytes."""
    try:
        session_open(session).close()
    except OSError:
        return False
    except Exception:  # UnsafePath: a link or a FIFO is not read
        return False
    return True
