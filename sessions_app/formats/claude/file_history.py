"""Claude Code's file checkpoints, pure: which backup holds each edited file at a prompt.

Before each prompt Claude Code records a `file-history-snapshot` whose
`messageId` is the prompt's uuid: for every file it has edited so far (the
"tracked" files), the backup that holds the file as it was when the prompt was
sent, in `~/.claude/file-history/<session id>/<backup name>`. A `backupFileName`
of null means the file did not exist then. A file first edited during a turn is
added to that turn's snapshot: by a `file-history-delta` record (2.1.3xx, one
file each) or by the whole snapshot written again with `isSnapshotUpdate` (older
versions); its version 1 is the file before the first edit.

So the files as they were when prompt P was sent are P's snapshot, and for each
file tracked only later, its version 1 (the CLI's own rewind does the same). The
files as they were after turn N are the snapshot of the prompt that follows
turn N. Everything here reads untrusted records: a name that is not a plain
backup name is no backup, a path is only returned, never opened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SNAPSHOT = "file-history-snapshot"
DELTA = "file-history-delta"
RECORD_TYPES = (SNAPSHOT, DELTA)

# `<16 hex of the path's hash>@v<version>` as Claude Code names them; a little
# wider here, but never a path: no "/", no leading dot.
_BACKUP_NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}@v[0-9]{1,9}")
_PATH_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Backup:
    """One backup of a tracked file: `name` None when the file did not exist."""

    name: str | None
    version: int
    parent_dir: str  # the folder the tracked path is relative to ("" when not said)


# What a file was at a prompt: its backup, or None when no backup says.
State = dict[str, Backup | None]


def backup_name_valid(name: str) -> bool:
    """Whether `name` is a plain backup name (never a path), as the checkpoint records say."""
    return bool(_BACKUP_NAME_RE.fullmatch(name))


def _backup(value: Any) -> Backup | None:
    """A `trackedFileBackups` entry read defensively; None when it makes no sense."""
    if not isinstance(value, dict):
        return None
    version = value.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return None
    name = value.get("backupFileName")
    if name is not None and not (isinstance(name, str) and _BACKUP_NAME_RE.fullmatch(name)):
        return None
    parent = value.get("realParentDir")
    parent = parent if isinstance(parent, str) and len(parent) <= _PATH_LIMIT else ""
    return Backup(name, version, parent)


def _tracked_path(path: Any) -> str | None:
    if not isinstance(path, str) or not path or len(path) > _PATH_LIMIT or "\0" in path:
        return None
    return path


class Checkpoints:
    """The snapshots of one session file, fed its checkpoint records in file order."""

    def __init__(self) -> None:
        self._snapshots: dict[str, dict[str, Backup]] = {}
        self._first: dict[str, Backup] = {}

    def add(self, data: Any) -> None:
        """Take in one parsed record; anything that is not a checkpoint is ignored."""
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == SNAPSHOT:
            snapshot = data.get("snapshot")
            if not isinstance(snapshot, dict):
                return
            prompt = data.get("messageId") or snapshot.get("messageId")
            tracked = snapshot.get("trackedFileBackups")
            if not isinstance(prompt, str) or not isinstance(tracked, dict):
                return
            files: dict[str, Backup] = {}
            for path, value in tracked.items():
                backup, path = _backup(value), _tracked_path(path)
                if backup is not None and path is not None:
                    files[path] = backup
                    self._note_first(path, backup)
            # A snapshot written again (`isSnapshotUpdate`) is whole: it replaces.
            self._snapshots[prompt] = files
        elif kind == DELTA:
            prompt = data.get("snapshotMessageId")
            path, backup = _tracked_path(data.get("trackingPath")), _backup(data.get("backup"))
            if isinstance(prompt, str) and path is not None and backup is not None:
                self._snapshots.setdefault(prompt, {})[path] = backup
                self._note_first(path, backup)

    def _note_first(self, path: str, backup: Backup) -> None:
        known = self._first.get(path)
        if known is None or backup.version < known.version:
            self._first[path] = backup

    @property
    def any_files(self) -> bool:
        """Whether any file was ever tracked (any backup at all to restore)."""
        return bool(self._first)

    def state_at(self, prompt_uuid: str) -> State | None:
        """Every tracked file as it was when prompt `prompt_uuid` was sent.

        None when the CLI made no snapshot for that prompt. A file tracked only
        later is as its version 1 says; when that version was never recorded, its
        state is not known (None).
        """
        snapshot = self._snapshots.get(prompt_uuid)
        if snapshot is None:
            return None
        state: State = dict(snapshot)
        for path, first in self._first.items():
            if path not in state:
                state[path] = first if first.version == 1 else None
        return state
