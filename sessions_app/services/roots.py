"""The session roots, and the one way to open a file under them.

Every file the dashboard reads or writes lies under a configured root once its
path is resolved; links are never followed and only regular files are opened, so
a link planted in a root cannot lead the server to a file outside it, and a FIFO
cannot hang it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from ..formats import agents


class UnsafePath(Exception):
    """A path that is a link, not a regular file, or outside the session roots."""


def resolve_root(root: Path) -> Path:
    """Accept `~/.claude` as well as `~/.claude/projects` (any agent's home folder)."""
    root = root.expanduser()
    for agent in agents():
        if root.name == agent.home_folder and (root / agent.projects_root).is_dir():
            return root / agent.projects_root
    return root


def configured_roots() -> list[Path]:
    """The configured session roots, resolved (a root may itself be a link)."""
    return [resolve_root(Path(r)).resolve() for r in settings.SESSION_ROOTS]


def roots_hint() -> str:
    """Names the configured roots and how to add one, for refusals."""
    names = ", ".join(str(r) for r in configured_roots()) or "none"
    return (
        f"the configured session roots are: {names}; add a root to BRANCHBOARD_ROOTS "
        f"(paths separated by {os.pathsep!r}), or import it once with "
        "manage.py import_sessions --root FOLDER"
    )


def check_inside(path: Path, root: Path | str) -> None:
    """Refuse a path that resolves outside `root` or whose last part is a link."""
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        is_link = False
    if is_link:
        raise UnsafePath(f"{path}: a symbolic link; links are never followed")
    real_root = Path(os.path.realpath(root))
    if not Path(os.path.realpath(path)).is_relative_to(real_root):
        raise UnsafePath(f"{path}: outside the session root {real_root}")


def open_regular(path: Path | str, *, root: Path | str) -> BinaryIO:
    """Open a regular file under `root` for reading, never through a link.

    Raises `UnsafePath` for a link, a FIFO, socket or device, or a path outside
    `root`; `OSError` (FileNotFoundError, PermissionError) as `open` would.
    """
    check_inside(Path(path), root)
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{path}: not a regular file ({file_kind(st.st_mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message."""
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((name for test, name in kinds if test(mode)), "an unknown kind of file")
