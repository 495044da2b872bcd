"""Restore to disk: a session the archive holds, written back byte for byte where its CLI looks.

The file is created exclusively (`O_CREAT|O_EXCL`, mode 0600, no link followed),
written from pieces each checked against its digest, fsynced, and read back against
the digests before it counts as restored; anything already at the path refuses it. The
session row then takes the new file's state, so the next import finds it unchanged.
The session's subagent transcripts the archive holds come back with it, the files of its
folder (`archive.sidecars`) and its file-history backups that are missing from the CLI's
folders (each checked against its digest; one that is there with other bytes is reported
and left alone). Every file that does not come back is named, with the reason.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO

from django.db import transaction

from ...formats.claude.file_history import backup_name_valid
from ...models import Session
from ...models.archive import ArchivedFile
from ..errors import check_not_pushed
from . import ArchiveError, ArchiveReader, archive_covers, digest, piece_bytes
from .files import file_history_folder
from .sidecars import SIDECAR, sidecar_folder
from .writing import Restored, RestoreRefused, folder_open, whole_file_write


def session_restore(*, session: Session) -> Restored:
    """Write the session's file (and its subagent files and file backups that are gone)
    back from the archive.

    Returns the files written. Raises `RestoreRefused` when a file is there already,
    the archive does not hold the session whole, or a piece is corrupted, and
    `PushedReadOnly` for a session a machine pushed to this hub.
    """
    # Refused as rewind and undo are (403): the file is the machine's, not a conflict.
    check_not_pushed(session, "a restore")
    if os.path.lexists(session.path):
        raise RestoreRefused(
            f"{session.path} exists: nothing to restore (a file is never overwritten)"
        )
    if not archive_covers(session):
        raise RestoreRefused(
            f"the archive does not hold session {session.session_id} whole; nothing was written"
        )
    written = Restored()
    written.append(_restore_file(session))
    subagents = Session.objects.subagents_of(session).filter(project=session.project)
    for sub in subagents.order_by("path"):
        if os.path.lexists(sub.path):
            continue
        if not archive_covers(sub):
            written.problems.append(
                f"{sub.path}: not restored: the archive does not hold this subagent "
                "transcript whole"
            )
            continue
        try:
            written.append(_restore_file(sub))
        except RestoreRefused as exc:
            written.problems.append(f"{sub.path}: not restored: {exc}")
    _restore_file_history(session, written)
    _restore_folder(session, written)
    return written


def _restore_file_history(session: Session, written: Restored) -> None:
    """Each archived file-history backup missing from the CLI's folder, written back."""
    rows = ArchivedFile.objects.filter(
        session=session, kind=ArchivedFile.Kind.FILE_HISTORY
    ).order_by("name")
    folder = file_history_folder(session)
    if folder is None or not rows.exists():
        return
    try:
        folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.path.lexists(folder):
            os.mkdir(folder, 0o700)
        # Never through a link: the folder is opened as itself and each backup under it.
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        written.problems.append(f"{folder}: file backups not restored ({exc.strerror or exc})")
        return
    try:
        for row in rows.iterator(chunk_size=20):
            path = folder / row.name
            if not backup_name_valid(row.name):
                written.problems.append(f"{path}: not a backup's name; not restored")
            elif whole_file_write(row, path, dir_fd, written.problems):
                written.append(path)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _restore_file(session: Session) -> Path:
    """One file, written exclusively, verified, and its index row told its new state."""
    path = Path(session.path)
    folder_fd = folder_open(path, session.project.root)
    try:
        st = _write_file(session, path, folder_fd)
    finally:
        os.close(folder_fd)
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


def _write_file(session: Session, path: Path, folder_fd: int) -> os.stat_result:
    """The file created in its folder's descriptor, written, read back; removed on failure."""
    name = path.name
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        reader = ArchiveReader(session)
        pieces = reader.pieces
        try:
            fd = os.open(name, flags, 0o600, dir_fd=folder_fd)
        except FileExistsError:
            raise RestoreRefused(f"{path} exists: nothing to restore") from None
        except OSError as exc:
            raise RestoreRefused(f"{path}: cannot create it ({exc.strerror})") from None
        try:
            with os.fdopen(fd, "r+b", closefd=False) as out:
                for _, _, pk in pieces:
                    out.write(piece_bytes(pk, str(session.session_id)))
                out.flush()
                os.fsync(fd)
                os.fsync(folder_fd)
                _read_back(session, path, out)
                return os.fstat(fd)
        except BaseException:
            _unlink_own(name, folder_fd, fd)
            raise
        finally:
            os.close(fd)
    except ArchiveError as exc:
        raise RestoreRefused(f"{exc.strerror}; nothing was written") from None
    except OSError as exc:
        raise RestoreRefused(f"{path}: not restored ({exc.strerror or exc}); removed it") from None


def _unlink_own(name: str, folder_fd: int, fd: int) -> None:
    """Remove the file this restore created, through the folder's descriptor."""
    # Only while the name is still this file: another file there is never removed.
    with contextlib.suppress(OSError):
        own = os.fstat(fd)
        there = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        if (there.st_dev, there.st_ino) == (own.st_dev, own.st_ino):
            os.unlink(name, dir_fd=folder_fd)


def _read_back(session: Session, path: Path, f: BinaryIO) -> None:
    """The file just written holds every piece's bytes, by their digests."""
    pieces = list(session.archive_pieces.order_by("start").values_list("start", "length", "digest"))
    for start, length, expected in pieces:
        f.seek(start)
        if digest(f.read(length)) != expected:
            raise RestoreRefused(f"{path}: did not read back as archived; removed it")
    if f.read(1):
        raise RestoreRefused(f"{path}: longer than archived; removed it")


def _restore_folder(session: Session, written: Restored) -> None:
    """Each archived file of the session's folder missing from it, written back (never over
    another file, never through a link); each one that cannot come back named in
    `written.problems`."""
    folder = sidecar_folder(session)
    rows = ArchivedFile.objects.filter(session=session, kind=SIDECAR).order_by("name")
    if folder is None:
        return
    for row in rows.iterator(chunk_size=20):
        path = folder / row.name
        parts = row.name.split("/")
        if "\x00" in row.name or any(p in {"", ".", ".."} for p in parts):
            written.problems.append(f"{path}: not a path in the session's folder; not restored")
            continue
        try:
            dir_fd = folder_open(path, session.project.root)
        except RestoreRefused as exc:
            written.problems.append(f"{path}: not restored: {exc}")
            continue
        try:
            if whole_file_write(row, path, dir_fd, written.problems):
                written.append(path)
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
