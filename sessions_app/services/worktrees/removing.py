"""Removing an agent worktree: only under the agent folders, never losing a commit.

Only a worktree of the repository asked about (the project's, on the page) is
removed, and one the dashboard did not make (no ownership mark in git's admin
folder of the worktree: the CLI's own `agent-` worktrees, one made by hand, one whose
checkout holds a committed `.branchboard-worktree.json`) only when the user confirms
it is someone else's. Refused while it has uncommitted, untracked, conflicted or ignored files
(`git worktree remove` deletes ignored ones too: a `.env` is a secret, not litter)
unless discarding them is confirmed; a marker naming a session that is being
written right now needs confirming too. The branch is deleted with `git branch -d`
only, so a branch holding commits no other branch or remote holds is always kept.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.template.defaultfilters import pluralize

from ...formats.worktrees import MARKER, is_agent_slug, is_stale, worktree_folders, worktree_of
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
            n = self.unique_commits
            said += (
                f"; kept its branch {self.branch}: {n} commit{pluralize(n)} on it "
                f"{pluralize(n, 'is,are')} on no other branch or remote"
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


def worktree_remove(
    path: str | Path,
    *,
    discard: bool = False,
    live_ok: bool = False,
    foreign: bool = False,
    listed_in: Path | None = None,
) -> Removal:
    """Remove the agent worktree at `path` and, where no commit would be lost, its branch.

    `listed_in`: the folder (a project's) whose repository's worktree list must hold
    `path`, given in full as the list shows it. `foreign`: the user confirmed that a
    worktree without the dashboard's marker is someone else's and may go.
    """
    if not str(path).strip():
        raise NotAWorktree("no worktree path was given; nothing was removed")
    if listed_in is not None and not os.path.isabs(path):
        raise NotAWorktree(
            f"{str(path)!r} is not one of this project's worktrees: give its full path "
            "as the project's list shows it; nothing was removed"
        )
    path = Path(os.path.abspath(path))
    top = repository_of(path)
    if path.is_symlink() or not path.is_dir():
        raise NotAWorktree(f"{path} is not a worktree folder on this machine")
    entry = _listed_entry(path, top, listed_in)
    try:
        found = git.changes(path, own=frozenset({MARKER}), ignored=True)
    except GitError as exc:
        raise WorktreeError(f"{exc}; nothing was removed") from None
    # Every confirmation still missing, in one message, so one answer can give them all.
    missing = []
    if not foreign and read_marker(path).get("tool") != "branchboard":
        missing.append(
            f"{path} was not made by branchboard (git keeps no ownership mark of ours for it): "
            "it may be a CLI's own or one made by hand; confirm that it is someone else's "
            "to remove it"
        )
    if found.dirty and not discard:
        missing.append(
            f"{path} has uncommitted changes ({found.describe()}); confirm discarding them"
        )
    if missing:
        raise NeedsConfirmation("; ".join(missing))
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
        # The path as git lists it, not as given: the one checked above.
        git.git("worktree", "remove", *force, str(entry.path), cwd=top)
    except GitError as exc:
        raise WorktreeError(f"{exc}; nothing was removed") from None
    deleted, unique = False, 0
    if entry.branch:
        done = git.git("branch", "-d", entry.branch, cwd=top, ok=(0, 1))
        deleted = done.returncode == 0
        unique = 0 if deleted else git.unique_commits(top, entry.branch)
    return Removal(path, entry.branch, deleted, unique, found)


def _listed_entry(path: Path, top: Path, listed_in: Path | None) -> git.WorktreeEntry:
    """`path`'s entry in the worktree list of `listed_in`'s repository (else `top`'s)."""
    if listed_in is not None and not (listed_in.is_absolute() and listed_in.is_dir()):
        raise NotAWorktree(
            "this project's folder is not on this machine, so it lists no worktrees; "
            "nothing was removed"
        )
    try:
        entries = git.worktrees(listed_in or top)
    except GitError as exc:
        raise WorktreeError(f"{exc}; nothing was removed") from None
    real = os.path.realpath(path)
    entry = next((e for e in entries if os.path.realpath(e.path) == real), None)
    if entry is not None and not entry.main:
        return entry
    if listed_in is not None:
        raise NotAWorktree(
            f"{path} is not one of this project's worktrees (those of the repository at "
            f"{listed_in}); nothing was removed"
        )
    raise NotAWorktree(f"{path} is not a worktree of the repository {top}")


def _live_session(path: Path) -> Session | None:
    """The session the marker names, if its file changed in the last LIVE_SECONDS."""
    session_id = read_marker(path).get("session_id")
    if not isinstance(session_id, str):
        return None
    # A worktree is this machine's: so is the session its marker names (never a pushed one).
    found = Session.objects.listed().filter(session_id=session_id, namespace="")
    session = found.first() if session_id else None
    if session is None:
        return None
    try:
        st = os.stat(session.path)
    except OSError:
        return None
    if session.own_write == own_write(st):
        return None  # the dashboard wrote it last (the fork itself), not a running CLI
    return session if time.time() - st.st_mtime < LIVE_SECONDS else None


def stale_worktrees_remove(folder: Path, *, foreign: bool = False) -> list[tuple[Path, str]]:
    """Remove every stale agent worktree of the repository `folder` is in.

    Each goes through `worktree_remove`'s guards (the CLIs' worktrees have no marker of
    ours: `foreign` is the user's word that they may go); one whose state cannot be
    read, or that a guard stops, is left where it is (fails closed). Returns (path,
    what happened) for each agent worktree looked at.
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
            # As the project page counts them: an ignored `.env` is not nothing.
            found = git.changes(entry.path, own=frozenset({MARKER}), ignored=True)
            unique = git.unique_commits(entry.path, entry.branch) if entry.branch else 0
            age = git.age_days(entry.path, git.last_commit_time(entry.path, "HEAD"))
        except GitError as exc:
            done.append((entry.path, f"kept: its state could not be read ({exc})"))
            continue
        if not is_stale(entry.path.name, age_days=age, dirty=found.dirty, unique=unique):
            done.append((entry.path, "kept: not stale"))
            continue
        try:
            done.append((entry.path, worktree_remove(entry.path, foreign=foreign).describe()))
        except WorktreeError as exc:
            done.append((entry.path, f"kept: {exc}"))
    return done
