"""Atomic, exclusive file writes. Nothing here ever overwrites a file in place."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


TEMP_RE = re.compile(r"^\.[0-9a-f-]{36}\.jsonl\.[0-9a-f]{8}\.tmp$")
STALE_SECONDS = 3600


def _temp_path(target: Path) -> Path:
    # A dot name that does not end in .jsonl: the CLIs and the importer ignore it.
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


def stale_temp_files_remove(folder: Path) -> list[Path]:
    """Remove temp files an interrupted write (a killed process) left over an hour ago.

    Only names this module makes are touched; a live write is never that old.
    """
    removed: list[Path] = []
    now = time.time()
    try:
        candidates = [p for p in folder.iterdir() if TEMP_RE.match(p.name)]
    except OSError:
        return removed
    for path in candidates:
        try:
            if now - path.stat().st_mtime > STALE_SECONDS:
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    return removed


Verify = Callable[[Path], object]


class NewFile:
    """A temporary file beside `target`, written, fsynced, then linked to `target` by the caller."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.path = _temp_path(target)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        self.out: BinaryIO = os.fdopen(fd, "wb", buffering=1024 * 1024)
        self.linked = False

    def finish(self) -> None:
        """Everything written reaches the disk; the file is closed."""
        self.out.flush()
        os.fsync(self.out.fileno())
        self.out.close()

    def replace_tail(self, offset: int, data: bytes) -> None:
        """Cut the finished file at `offset`, append `data` and fsync: a last line rewritten."""
        fd = os.open(self.path, os.O_WRONLY | os.O_NOFOLLOW)
        try:
            os.ftruncate(fd, offset)
            os.lseek(fd, offset, os.SEEK_SET)
            _write_all(fd, data)
        finally:
            os.close(fd)

    def link(self) -> None:
        """Give the file its name; `FileExistsError` if it is taken (nothing is overwritten)."""
        os.link(self.path, self.target)
        self.linked = True
        _fsync_dir(self.target.parent)


@contextlib.contextmanager
def new_file(target: Path) -> Iterator[NewFile]:
    """A `NewFile` for `target`; the temporary name is gone on the way out, linked or not."""
    made = NewFile(target)
    try:
        yield made
    finally:
        made.out.close()
        made.path.unlink(missing_ok=True)


@contextlib.contextmanager
def create_exclusive(
    target: Path, *, verify: Verify | None = None, mode: int = 0o600
) -> Iterator[BinaryIO]:
    """Write a new file that appears under `target` only once complete and checked.

    The data goes to a temporary file in the same folder (`mode`, 0600 unless said), is fsynced,
    read back by `verify` (which raises to stop), then hard-linked to `target`,
    which fails if `target` exists: a crash never leaves a partial file under the
    final name, and nothing is overwritten.
    """
    temp = _temp_path(target)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)  # the umask does not decide
        with os.fdopen(fd, "wb", buffering=1024 * 1024) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if verify is not None:
            verify(temp)
        os.link(temp, target)
        _fsync_dir(target.parent)
    finally:
        temp.unlink(missing_ok=True)


@contextlib.contextmanager
def replace_atomically(
    target: Path, *, verify: Verify | None = None, mode: int | None = None
) -> Iterator[BinaryIO]:
    """Rewrite `target`: a fsynced temporary file, read back by `verify`, renamed over it.

    The new file keeps `target`'s permissions unless `mode` says others; a link at
    `target` is replaced, never followed.
    """
    temp = _temp_path(target)
    if mode is None:
        mode = os.lstat(target).st_mode & 0o777
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb", buffering=1024 * 1024) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if verify is not None:
            verify(temp)
        os.replace(temp, target)
        _fsync_dir(target.parent)
    finally:
        temp.unlink(missing_ok=True)


def append_durably(target: Path, data: bytes) -> None:
    """Append whole lines to an existing file and fsync them."""
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd` (a write may take only part), then fsync."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)
