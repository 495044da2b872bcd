"""Restore to disk: a session the archive holds, written back byte for byte where its CLI looks.

The file is created exclusively (`O_CREAT|O_EXCL`, mode 0600, no link followed),
written from pieces each checked against its digest, fsynced, and read back against
the digests before it counts as restored; anything already at the path refuses it. The
session row then takes the new file's state, so the next import finds it unchanged.
The session's subagent transcripts the archive holds come back with it.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.db import transaction

from ..models import Session
from .archive import ArchiveError, ArchiveReader, archive_covers, digest, piece_bytes
from .branching.errors import SourceChanged
from .roots import UnsafePath, check_inside


class RestoreRefused(SourceChanged):
    """The session cannot be restored; the message says why (409). Nothing was written."""


def session_restore(*, session: Session) -> list[Path]:
    """Write the session's file (and its subagent files that are gone) back from the archive.

    Returns the files written. Raises `RestoreRefused` when a file is there already,
    the archive does not hold the session whole, or a piece is corrupted.
    """
    if os.path.lexists(session.path):
        raise RestoreRefused(
            f"{session.path} exists: nothing to restore (a file is never overwritten)"
        )
    if not archive_covers(session):
        raise RestoreRefused(
            f"the archive does not hold session {session.session_id} whole; nothing was written"
        )
    written = [_restore_file(session)]
    subagents = Session.objects.filter(
        is_subagent=True, owner_session_id=session.session_id, project=session.project
    )
    for sub in subagents:
        if not os.path.lexists(sub.path) and archive_covers(sub):
            written.append(_restore_file(sub))
    return written


def _restore_file(session: Session) -> Path:
    """One file, written exclusively, verified, and its index row told its new state."""
    path = Path(session.path)
    root = session.project.root
    try:
        check_inside(path, root)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        check_inside(path.parent, root)  # made, and still no link on the way
    except UnsafePath as exc:
        raise RestoreRefused(f"{exc}; nothing was written") from None
    try:
        reader = ArchiveReader(session)
        pieces = reader.pieces
        label = str(session.session_id)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise RestoreRefused(f"{path} exists: nothing to restore") from None
        try:
            with os.fdopen(fd, "wb") as out:
                for _, _, pk in pieces:
                    out.write(piece_bytes(pk, label))
                out.flush()
                os.fsync(out.fileno())
            _fsync_folder(path.parent)
            _read_back(session, path)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    except ArchiveError as exc:
        raise RestoreRefused(f"{exc.strerror}; nothing was written") from None
    st = os.lstat(path)
    with transaction.atomic():
        # The file is exactly what the index names: the next import skips it.
        Session.objects.filter(pk=session.pk).update(
            file_size=st.st_size,
            file_mtime_ns=st.st_mtime_ns,
            file_inode=st.st_ino,
            file_removed_at=None,
            # Written by the dashboard, not a running CLI: no "busy" wait for its actions.
            own_write={"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino},
        )
    session.refresh_from_db()
    return path


def _read_back(session: Session, path: Path) -> None:
    """The file just written holds every piece's bytes, by their digests."""
    pieces = list(session.archive_pieces.order_by("start").values_list("start", "length", "digest"))
    with open(path, "rb") as f:
        for start, length, expected in pieces:
            f.seek(start)
            if digest(f.read(length)) != expected:
                raise RestoreRefused(f"{path}: did not read back as archived; removed it")
        if f.read(1):
            raise RestoreRefused(f"{path}: longer than archived; removed it")


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
