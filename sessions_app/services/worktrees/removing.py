"""Removing an agent worktree: only under the agent folders, never losing a commit.

Refused while it has uncommitted, untracked or conflicted changes unless
discarding them is confirmed; a marker naming a session that is being written
right now needs confirming too. The branch is deleted with `git branch -d` only,
so a branch holding commits no other branch or remote holds is always kept.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ...formats.worktrees import is_agent_slug, is_stale, worktree_folders, worktree_of
from ...models import Session
from .. import git
from ..branching.guards import own_write
from ..git import Changes, GitError, read_marker
from .errors import NeedsConfirmation, NotAWorktree, WorktreeError

# A session whose file changed this recently is taken to be running.
LIVE_SECONDS = 60


@dataclass(frozen=True)
class Removal:
    """What a removal did."""

    path: Path
    branch: str | None
    branch_deleted: bool
    unique_commits: int  # held only by the kept branch (0 when it was deleted)
    discarded: Changes

    def describe(self) -> str:
        said = f"removed the worktree {self.path}"
        if self.discarded.dirty:
            said += f", discarding {self.discarded.describe()}"
        if self.branch and self.branch_deleted:
            said += f"; deleted its branch {self.branch}"
        elif self.branch:
            said += (
                f"; kept its branch {self.branch}: {self.unique_commits} commit(s) on it "
                "are on no other branch or remote"
            )
        return said


def repository_of(path: Path) -> Path:
    """The top level of the repository whose agent worktree folder holds `path`."""
    parent = str(path.parent)
    for folder in worktree_folders():
        if parent.endswith("/" + folder):
            return Path(parent[: -len(folder) - 1] or "/")
    raise NotAWorktree(
        f"{path} is not in an agent worktree folder ("
        + ", ".join(f"<repository>/{f}/<name>" for f in worktree_folders())
        + "); only those are removed here"
    )


def worktree_remove(path: Path, *, discard: bool = False, live_ok: bool = False) -> Removal:
    """Remove the agent worktree at `path` and, where no commit would be lost, its branch."""
    path = Path(os.path.abspath(path))
    top = repository_of(path)
    if path.is_symlink() or not path.is_dir():
        raise NotAWorktree(f"{path} is not a worktree folder on this machine")
    try:
        entry = next(
            (e for e in git.worktrees(top) if os.path.realpath(e.path) == os.path.realpath(path)),
            None,
        )
        if entry is None or entry.main:
            raise NotAWorktree(f"{path} is not a worktree of the repository {top}")
        found = git.changes(path)
    except GitError as exc:
        raise WorktreeError(f"{exc}; nothing was removed") from None
    if found.dirty and not discard:
        raise NeedsConfirmation(
            f"{path} has uncommitted changes ({found.describe()}); confirm discarding them"
        )
    live = _live_session(path)
    if live is not None and not live_ok:
        raise NeedsConfirmation(
            f"{path} belongs to session {live.session_id}, written in the last "
            f"{LIVE_SECONDS} s: it may still be running there; confirm to remove it anyway"
        )
    try:
        # One --force: changes (confirmed above) go; a worktree locked with `git worktree
        # lock` stays refused.
        force = ["--force"] if found.dirty else []
        git.git("worktree", "remove", *force, str(path), cwd=top)
    except GitError as exc:
        raise WorktreeError(f"{exc}; nothing was removed") from None
    deleted, unique = False, 0
    if entry.branch:
        done = git.git("branch", "-d", entry.branch, cwd=top, ok=(0, 1))
        deleted = done.returncode == 0
        unique = 0 if deleted else git.unique_commits(top, entry.branch)
    return Removal(path, entry.branch, deleted, unique, found)


def _live_session(path: Path) -> Session | None:
    """The session the marker names, if its file changed in the last LIVE_SECONDS."""
    session_id = read_marker(path).get("session_id")
    if not isinstance(session_id, str):
        return None
    session = Session.objects.filter(session_id=session_id).first() if session_id else None
    if session is None:
        return None
    try:
        st = os.stat(session.path)
    except OSError:
        return None
    if session.own_write == own_write(st):
        return None  # the dashboard wrote it last (the fork itself), not a running CLI
    return session if time.time() - st.st_mtime < LIVE_SECONDS else None


def stale_worktrees_remove(folder: Path) -> list[tuple[Path, str]]:
    """Remove every stale agent worktree of the repository `folder` is in.

    Each goes through `worktree_remove`'s guards; one whose state cannot be read, or
    that a guard stops, is left where it is (fails closed). Returns (path, what
    happened) for each agent worktree looked at.
    """
    try:
        entries = git.worktrees(folder)
    except GitError as exc:
        raise WorktreeError(f"{exc}; nothing was removed") from None
    done: list[tuple[Path, str]] = []
    for entry in entries:
        if entry.main or worktree_of(entry.path) is None or not is_agent_slug(entry.path.name):
            continue
        try:
            found = git.changes(entry.path)
            unique = git.unique_commits(entry.path, entry.branch) if entry.branch else 0
            age = git.age_days(entry.path, git.last_commit_time(entry.path, "HEAD"))
        except GitError as exc:
            done.append((entry.path, f"kept: its state could not be read ({exc})"))
            continue
        if not is_stale(entry.path.name, age_days=age, dirty=found.dirty, unique=unique):
            done.append((entry.path, "kept: not stale"))
            continue
        try:
            done.append((entry.path, worktree_remove(entry.path).describe()))
        except WorktreeError as exc:
            done.append((entry.path, f"kept: {exc}"))
    return done
