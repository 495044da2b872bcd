"""The code as it was at a turn: Claude Code's file backups restored into a fork's new worktree.

Which backup holds each file at a prompt is `formats.claude.file_history`; this module
finds the prompt that matches the fork (the one after turn N for "keep turns
1..N", prompt N itself for edit & fork), reads the session's checkpoint records
through the index, and writes each file into the new worktree: only below the
worktree, never through a link, each file written whole (a temporary file renamed
into place). A file the point in time did not have is removed from the worktree.
A file outside the repository, or whose backup is missing, is listed, not
guessed. Nothing outside the new worktree is written, and no `.git` (at any depth) nor
the dashboard's marker inside it.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

import orjson

from ...formats import agent_for
from ...formats.claude.file_history import RECORD_TYPES, Backup, Checkpoints, State
from ...formats.worktrees import MARKER
from ...models import Session
from ..branching.copying import read_records
from ..files import create_exclusive, replace_atomically
from ..roots import UnsafePath, open_regular
from .creating import WorktreePlan

LIST_LIMIT = 20  # file names a message shows; the API and the command list them all


@dataclass(frozen=True)
class RestorePoint:
    """The files' state a fork asks for: when prompt `prompt_uuid` was sent."""

    prompt_uuid: str | None  # None: no prompt follows, so no backup holds that state
    label: str  # "after turn 3", "before turn 3"


@dataclass
class Restoration:
    """What restoring the files into a worktree did, file by file (paths in the worktree)."""

    point: str
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # did not exist at that point
    no_backup: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: why"
    reason: str = ""  # why nothing could be restored at all

    def as_json(self) -> dict:
        return {
            "point": self.point,
            "restored": self.restored,
            "removed": self.removed,
            "no_backup": self.no_backup,
            "skipped": self.skipped,
            "only_conversation": not (self.restored or self.removed),
            "reason": self.reason,
        }

    def describe(self, limit: int | None = LIST_LIMIT) -> str:
        """One paragraph for a page's message (at most `limit` names per list)."""
        if self.reason:
            return f"Only the conversation was forked: {self.reason}."
        parts = [f"Files as they were {self.point}:"]
        for name, paths in (
            ("restored", self.restored),
            ("removed (not there yet)", self.removed),
            ("no backup, left as committed", self.no_backup),
            ("not restored", self.skipped),
        ):
            if paths:
                cut = len(paths) if limit is None else limit
                shown = ", ".join(paths[:cut])
                more = f" and {len(paths) - cut} more" if len(paths) > cut else ""
                parts.append(f"{len(paths)} {name}: {shown}{more}.")
        if len(parts) == 1:
            parts.append("Claude Code had edited no file by then; nothing to restore.")
        return " ".join(parts)


def restore_point(session: Session, *, turn: int | None, include_turn: bool) -> RestorePoint:
    """The prompt whose snapshot holds the files a fork at `turn` goes on from."""
    if turn is None:
        turn, include_turn = session.turn_count, True
    label = f"after turn {turn}" if include_turn else f"before turn {turn}"
    wanted = turn + 1 if include_turn else turn
    prompt = session.records.active().turn_starts().filter(turn=wanted).values_list("uuid")
    found = prompt.first()
    return RestorePoint(found[0] if found and found[0] else None, label)


def read_state(session: Session, point: RestorePoint) -> tuple[State | None, str]:
    """Every tracked file at `point`, or None and why there is none (read before any write)."""
    agent = agent_for(session.agent)
    if not agent.file_history_folder:
        return None, f"{agent.label} keeps no backups of the files it edits"
    if point.prompt_uuid is None:
        return None, (
            f"Claude Code backs files up when a prompt is sent, so nothing holds them "
            f"{point.label}; the worktree has them as committed"
        )
    rows = (
        session.records.filter(raw_type__in=RECORD_TYPES)
        .order_by("line")
        .values_list("offset", "length", "digest")
    )
    checkpoints = Checkpoints()
    for raw in read_records(session, rows.iterator(chunk_size=2000)):
        try:
            checkpoints.add(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
    if not checkpoints.any_files:
        return None, "Claude Code kept no backups of files for this session"
    state = checkpoints.state_at(point.prompt_uuid)
    if state is None:
        return None, f"Claude Code made no file snapshot {point.label}"
    return state, ""


def history_folders(session: Session) -> list[Path]:
    """Where the backups may be: the session's own id, then the ids it was forked from."""
    agent = agent_for(session.agent)
    base = Path(session.project.root).parent / agent.file_history_folder
    folders: list[Path] = []
    seen: set[int] = set()
    current: Session | None = session
    while current is not None and current.pk not in seen and len(folders) < 100:
        seen.add(current.pk)
        folders.append(base / str(current.session_id))
        current = current.parent
    return folders


def restore_files(session: Session, plan: WorktreePlan, state: State, point: str) -> Restoration:
    """Write every tracked file of `state` into the new worktree of `plan`."""
    done = Restoration(point)
    folders = history_folders(session)
    for tracked, backup in sorted(state.items()):
        relative = _in_repository(tracked, backup, session, plan)
        if relative is None:
            done.skipped.append(f"{tracked}: outside the repository")
            continue
        shown = str(relative)
        if ".git" in relative.parts or relative.parts[0] == MARKER:
            # A `.git` at any depth would make a folder a repository whose config and
            # hooks git obeys there; the marker says who made the worktree.
            done.skipped.append(f"{shown}: git's or branchboard's own file; never restored")
            continue
        if backup is None:
            done.no_backup.append(shown)
            continue
        try:
            _restore_one(plan.path, relative, backup, folders, done, shown)
        except UnsafePath as exc:
            done.skipped.append(f"{shown}: {exc}")
    return done


def _in_repository(
    tracked: str, backup: Backup | None, session: Session, plan: WorktreePlan
) -> PurePosixPath | None:
    """The tracked path relative to the repository's top, or None when it lies outside."""
    parent = (backup.parent_dir if backup else "") or session.cwd
    absolute = os.path.normpath(os.path.join(parent, tracked))
    for top in (plan.old_top, str(plan.top)):
        relative = PurePosixPath(absolute)
        if relative.is_relative_to(top) and relative != PurePosixPath(top):
            inside = relative.relative_to(top)
            if ".." not in inside.parts:
                return inside
    return None


def _restore_one(
    worktree: Path,
    relative: PurePosixPath,
    backup: Backup,
    folders: list[Path],
    done: Restoration,
    shown: str,
) -> None:
    folder = _folder_inside(worktree, relative.parts[:-1], create=backup.name is not None)
    target = None if folder is None else folder / relative.name
    if backup.name is None:
        if target is not None and _exists(target):
            if stat.S_ISDIR(os.lstat(target).st_mode):
                raise UnsafePath("a folder in the worktree; left alone")
            target.unlink()
            done.removed.append(shown)
        return
    assert target is not None  # the folder was made
    source = _open_backup(folders, backup.name)
    if source is None:
        done.no_backup.append(shown)
        return
    with source:
        mode = os.fstat(source.fileno()).st_mode & 0o777
        current = os.lstat(target) if _exists(target) else None
        if current is None:
            with create_exclusive(target, mode=mode) as out:
                shutil.copyfileobj(source, out, 1 << 20)
        elif stat.S_ISDIR(current.st_mode):
            raise UnsafePath("a folder in the worktree; left alone")
        else:
            # A link is replaced by the file itself, never followed.
            keep = None if stat.S_ISREG(current.st_mode) else mode
            with replace_atomically(target, mode=keep) as out:
                shutil.copyfileobj(source, out, 1 << 20)
    done.restored.append(shown)


def _exists(path: Path) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    return True


def _folder_inside(worktree: Path, parts: tuple[str, ...], *, create: bool) -> Path | None:
    """`worktree/parts...`, each part a real folder (made if `create`), never a link."""
    folder = worktree
    for part in parts:
        folder = folder / part
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            if not create:
                return None
            os.mkdir(folder, 0o755)
            continue
        if stat.S_ISLNK(mode):
            raise UnsafePath(f"{folder.relative_to(worktree)} is a link in the worktree")
        if not stat.S_ISDIR(mode):
            raise UnsafePath(f"{folder.relative_to(worktree)} is not a folder in the worktree")
    return folder


def _open_backup(folders: list[Path], name: str) -> BinaryIO | None:
    for folder in folders:
        try:
            return open_regular(folder / name, root=folder)
        except FileNotFoundError:
            continue
        except (UnsafePath, OSError):
            return None
    return None
