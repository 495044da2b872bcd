"""Archived bytes written back to disk: a folder reached from a configured session root one
component at a time, never through a link; each whole file created exclusively (mode 0600),
fsynced and read back against its digest, never over another file.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from ...models.archive import ArchivedFile
from ..errors import SourceChanged
from ..roots import configured_roots, roots_hint
from . import ArchiveError, digest
from .files import archived_file_bytes


class RestoreRefused(SourceChanged):
    """The session cannot be restored; the message says why (409). Nothing was written."""


class Restored(list[Path]):
    """The files a restore wrote; `problems`: each file of the session it did not write back,
    and why (a restore never leaves one out unsaid)."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []


def folder_open(path: Path, root: str) -> int:
    """A descriptor of the file's folder, reached from a configured root one component at
    a time, each opened as itself (never through a link) relative to its parent's; missing
    folders are made (0700). `RestoreRefused` when that cannot be done."""
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


def whole_file_write(row: ArchivedFile, path: Path, dir_fd: int, problems: list[str]) -> bool:
    """The archived file `row` written as `path.name` in the folder `dir_fd`, exclusively, and
    read back. False when it was not written: already there with the same bytes, or (said in
    `problems`) not in the archive, corrupted, another file in its place, or a failed write."""
    name = path.name
    if row.not_kept is not None:
        problems.append(f"{path}: not in the archive ({row.not_kept}); not restored")
        return False
    try:
        raw = archived_file_bytes(row)
    except ArchiveError as exc:
        problems.append(f"{path}: not restored: {exc.strerror}")
        return False
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        if holds(row, name, dir_fd) is not True:
            problems.append(f"{path}: another file is there; left alone (never overwritten)")
        return False
    except OSError as exc:
        problems.append(f"{path}: not restored ({exc.strerror})")
        return False
    try:
        # The owner's execute bit is all a restore takes from the file's mode.
        if row.mode & stat.S_IXUSR:
            os.fchmod(fd, 0o700)
        with os.fdopen(fd, "wb") as out:
            out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        if holds(row, name, dir_fd) is not True:
            raise OSError(f"{path}: did not read back as archived")
    except OSError as exc:
        os.unlink(name, dir_fd=dir_fd)
        problems.append(f"{path}: not restored ({exc}); removed it")
        return False
    return True


def holds(row: ArchivedFile, name: str, dir_fd: int) -> bool | None:
    """Whether the regular file `name` in the folder `dir_fd` holds exactly the archived bytes;
    None: no regular file to read there (a link, a FIFO, unreadable)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        raw = f.read(row.length + 1)
    return len(raw) == row.length and digest(raw) == row.digest
