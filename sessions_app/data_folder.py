"""The data folder is private: it holds every transcript's text, login sessions and token hashes.

The folder is made 0700 and what branchboard keeps in it 0600 (folders inside 0700),
whatever the umask. A folder an older release left open is tightened at start-up,
saying what was changed. SQLite creates its database file with the umask's mode
and its -wal/-shm files with the database file's mode, so every new connection
makes those three private too (`sqlite_files_private`, connected in apps.py).
No Django here: settings.py calls `data_folder_private` before Django is set up.
"""

from __future__ import annotations

import os
import stat
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

# The local dashboard's owner token (services.owner_token).
OWNER_TOKEN = "owner_token"  # noqa: S105 (a file's name, not a secret)
FOLDER_MODE = 0o700
FILE_MODE = 0o600
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def _tighten(path: Path, mode: int, changed: list[str], label: str) -> None:
    """Give `path` `mode` if group or others may reach it; links are left alone."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
        return
    try:
        os.chmod(path, mode, follow_symlinks=False)
    except OSError as exc:
        changed.append(f"{label}: could not change it ({exc.strerror})")
        return
    changed.append(f"{label} {stat.S_IMODE(st.st_mode):04o} -> {mode:04o}")


def data_folder_private(folder: Path) -> list[str]:
    """Create `folder` 0700 if missing, else tighten it and what it holds; what was changed."""
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    changed: list[str] = []
    _tighten(folder, FOLDER_MODE, changed, "the folder")
    # branchboard keeps files at the top and in folders one level down (failed-runs/).
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            continue
        if entry.is_dir():
            _tighten(entry, FOLDER_MODE, changed, f"{entry.name}/")
            for inner in sorted(entry.iterdir()):
                if inner.is_file() and not inner.is_symlink():
                    _tighten(inner, FILE_MODE, changed, f"{entry.name}/{inner.name}")
        elif entry.name == OWNER_TOKEN and entry.is_file() and entry.stat().st_mode & 0o077:
            # Others could read it, so it may be known: made private it would still let them
            # in. Removed; the next start makes a new one (services.owner_token).
            entry.unlink()
            changed.append(f"{OWNER_TOKEN}: removed, a new one is made (open the new link)")
        elif entry.is_file():
            _tighten(entry, FILE_MODE, changed, entry.name)
    return changed


def data_folder_message(folder: Path, changed: list[str]) -> str:
    """What start-up says when it tightened the data folder."""
    return (
        f"branchboard: the data folder {folder} could be read by other users; "
        f"made it private: {', '.join(changed)}\n"
    )


def private_file(path: Path) -> None:
    """Make a file branchboard just created in the data folder 0600, whatever the umask."""
    _tighten(path, FILE_MODE, [], path.name)


def sqlite_file(connection: Any) -> str | None:
    """The file of a SQLite connection's database; None for another database, an
    in-memory one or one named by URI."""
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    return name


def sqlite_files_private(sender: Any, connection: Any, **kwargs: Any) -> None:
    """On a new SQLite connection, make its database file and -wal/-shm files 0600."""
    if (name := sqlite_file(connection)) is None:
        return
    for suffix in SQLITE_SUFFIXES:
        private_file(Path(name + suffix))


class PrivateLogFile(RotatingFileHandler):
    """A rotated log in the data folder, 0600 whatever the umask: it names sessions and folders."""

    def _open(self) -> TextIOWrapper:
        stream = super()._open()
        private_file(Path(self.baseFilename))
        return stream
