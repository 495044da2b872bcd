"""Restore to disk: a session the archive holds, written back byte for byte where its CLI looks.

The file is created exclusively (`O_CREAT|O_EXCL`, mode 0600, no link followed),
written from pieces each checked against its digest, fsynced, and read back against
the digests before it counts as restored; anything already at the path refuses it. The
session row then takes the new file's state, so the next import finds it unchanged.
The session's subagent transcripts the archive holds come back with it, and its
file-history backups that are missing from the CLI's folder (each checked against its
digest; one that is there with other bytes is reported and left alone).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from django.db import transaction

from ...formats.claude.file_history import backup_name_valid
from ...models import Session
from ...models.archive import ArchivedFile
from ..branching.errors import SourceChanged
from ..branching.guards import check_not_pushed
from ..roots import configured_roots, roots_hint
from . import ArchiveError, ArchiveReader, archive_covers, digest, piece_bytes
from .files import archived_file_bytes, file_history_folder


class RestoreRefused(SourceChanged):
    """The session cannot be restored; the message says why (409). Nothing was written."""


class Restored(list[Path]):
    """The files a restore wrote; `problems`: file backups it did not write, and why."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []


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
    for sub in subagents:
        if not os.path.lexists(sub.path) and archive_covers(sub):
            written.append(_restore_file(sub))
    _restore_file_history(session, written)
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
            path = _restore_backup(row, folder, dir_fd, written.problems)
            if path is not None:
                written.append(path)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _restore_backup(
    row: ArchivedFile, folder: Path, dir_fd: int, problems: list[str]
) -> Path | None:
    """One backup written exclusively and read back; None when it is there or cannot be."""
    path = folder / row.name
    if not backup_name_valid(row.name):
        problems.append(f"{path}: not a backup's name; not restored")
        return None
    try:
        raw = archived_file_bytes(row)
    except ArchiveError as exc:
        problems.append(f"{path}: not restored: {exc.strerror}")
        return None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(row.name, flags, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        if _holds(row, dir_fd) is not True:
            problems.append(f"{path}: another file is there; left alone (never overwritten)")
        return None
    except OSError as exc:
        problems.append(f"{path}: not restored ({exc.strerror})")
        return None
    try:
        # The owner's execute bit is all a worktree restore takes from a backup's mode.
        if row.mode & stat.S_IXUSR:
            os.fchmod(fd, 0o700)
        with os.fdopen(fd, "wb") as out:
            out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        if _holds(row, dir_fd) is not True:
            raise OSError(f"{path}: did not read back as archived")
    except OSError as exc:
        os.unlink(row.name, dir_fd=dir_fd)
        problems.append(f"{path}: not restored ({exc}); removed it")
        return None
    return path


def _holds(row: ArchivedFile, dir_fd: int) -> bool | None:
    """Whether the regular file named `row.name` holds exactly the archived bytes."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(row.name, flags, dir_fd=dir_fd)
    except OSError:
        return None  # a link, or unreadable
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        raw = f.read(row.length + 1)
    return len(raw) == row.length and digest(raw) == row.digest


def _restore_file(session: Session) -> Path:
    """One file, written exclusively, verified, and its index row told its new state."""
    path = Path(session.path)
    folder_fd = _open_folder(path, session.project.root)
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


def _open_folder(path: Path, root: str) -> int:
    """A descriptor of the file's folder, reached from a configured root one component at
    a time, each opened as itself (never through a link) relative to its parent's."""
    real_root = Path(os.path.realpath(root))
    roots = configured_roots()
    if real_root not in roots:
        raise RestoreRefused(
            f"{path}: its root {real_root} is not a configured session root; "
            f"{roots_hint()}; nothing was written"
        )
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise RestoreRefused(
            f"{path}: outside the session root {root}; nothing was written"
        ) from None
    if not parts or any(p in {"", ".", ".."} for p in parts):
        raise RestoreRefused(f"{path}: not a file under {root}; nothing was written")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(real_root, flags)
    except OSError as exc:
        raise RestoreRefused(
            f"{real_root}: cannot open the root ({exc.strerror}); nothing was written"
        ) from None
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            child = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError as exc:
        os.close(fd)
        raise RestoreRefused(
            f"{path}: a folder on its way is a link or cannot be opened "
            f"({exc.strerror or exc}); links are never followed; nothing was written"
        ) from None
    return fd


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
