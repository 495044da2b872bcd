"""The hub's per-file lock (a lock file beside the file, held across open, check and
write), the folders a push makes, and what a refused push raises."""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...models import HubNamespace
from .namespaces import namespace_folder


class PushRefused(Exception):
    """A push the hub does not take; `status` is the HTTP answer. Nothing was stored."""

    status = 400


class ProofFailed(PushRefused):
    """The bytes the machine says the hub holds are not the ones it holds."""

    status = 409


class NotAFolder(PushRefused):
    """The path goes through a name the hub holds as a file (`<file>.jsonl/y.jsonl`)."""

    status = 409


@contextmanager
def file_lock(path: str, target: Path) -> Iterator[None]:
    """One push of a file at a time, across the hub's processes: a lock file beside it
    (`.<name>.lock`), held across open, check and write, and removed by its holder.

    The lock is not the staging file's own: a commit renames that into place, and a
    chunk holding a handle to it by then would write into the live file."""
    lock = target.with_name(f".{target.name}.lock")
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            raise ProofFailed(f"{path}: the hub holds no such file; push it whole") from None
        except NotADirectoryError:
            raise NotAFolder(
                f"{path}: the hub holds a file where this path has a folder; not a folder"
            ) from None
        except OSError as exc:
            raise PushRefused(f"{path}: cannot be written on the hub ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _still_at(lock, os.fstat(fd)):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder removed it as this one waited: take the new one
    try:
        yield
    finally:
        os.unlink(lock)  # while held: a waiter finds its lock gone and takes a new one
        os.close(fd)


def _still_at(path: Path, st: os.stat_result) -> bool:
    """Whether the open file `st` is still the one at `path` (not renamed or replaced)."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def _folders_make(namespace: HubNamespace, folder: Path) -> None:
    """Make the folders down to `folder`, private, refusing a link on the way."""
    base = namespace_folder(namespace.name)
    base.parent.mkdir(mode=0o700, exist_ok=True)
    at = base.parent
    for part in folder.relative_to(base.parent).parts:
        at = at / part
        try:
            os.mkdir(at, 0o700)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(at).st_mode):
                raise NotAFolder(f"{at.name}: not a folder on the hub") from None
