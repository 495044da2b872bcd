"""What the pages show about git worktrees: whether a fork can get one, and a project's panel.

A session or project pushed to a hub (`namespace` set) ran on another machine: its cwd is
text from there. Nothing here runs git in it or looks at the hub's disk there, whatever
folder of the hub the text happens to name (the pages say git is not available instead).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Q

from ..formats import agent_for
from ..formats.worktrees import MARKER, is_stale, worktree_of
from ..models import Project, Session
from ..services import git
from ..services.git import BranchDiff, Changes, GitError, NotARepository, age_days, read_marker


def worktree_possible(session: Session) -> bool:
    """Whether to offer a fork into a worktree: the agent makes them, and the session's
    folder is on this machine and not itself an agent worktree (git decides the rest)."""
    folder = agent_for(session.agent).worktree_folder
    cwd = session.cwd
    if session.namespace or not (folder and cwd and os.path.isabs(cwd)):
        return False
    return os.path.isdir(cwd) and worktree_of(cwd) is None


def git_elsewhere(pushed: Session | Project) -> str:
    """The machine whose disk holds a session's (or project's) folder when it is not this one
    (pushed to a hub): git information about it is not available here. "" for this machine's."""
    return pushed.namespace.partition("@")[2] or pushed.namespace


def file_backups_kept(session: Session) -> bool:
    """Whether the session's CLI keeps backups of the files it edits and this file has
    checkpoint records (so a fork into a worktree can bring the files back too)."""
    # The flag is kept at import: no look through a long session's records per view.
    return bool(agent_for(session.agent).file_history_folder) and session.file_backups


@dataclass
class WorktreeRow:
    """One worktree of a project's repository, for the panel."""

    path: Path
    branch: str | None
    base: str  # where it branched off, as far as the marker says
    changes: Changes | None  # None: could not be read
    unique_commits: int
    age_days: float | None
    agent_made: bool  # under an agent worktree folder: removable from the panel
    owned: bool  # branchboard made it (its marker): else removing it needs confirming
    stale: bool
    sessions: list[Session] = field(default_factory=list)


def project_worktrees(project: Project) -> list[WorktreeRow]:
    """The linked worktrees of the repository the project's folder is in ([] when none, or
    the repository is not on this machine, or the project was pushed from another machine)."""
    top = project.path
    if project.namespace or not top or not os.path.isdir(top):
        return []
    try:
        entries = git.worktrees(Path(top))
    except GitError:
        return []
    return [_row(e) for e in entries if not (e.main or e.prunable)]


def _ran_in(path: Path) -> list[Session]:
    """This machine's listed sessions whose folder is `path` or lies below it (at most 20):
    a pushed session naming the same folder ran on its own machine, not in this worktree."""
    inside = Q(cwd=str(path)) | Q(cwd__startswith=str(path).rstrip("/") + "/")
    found = Session.objects.listed().filter(inside, namespace="").order_by("-updated_at")
    return list(found.only("session_id", "title", "cwd")[:20])


def _row(entry: git.WorktreeEntry) -> WorktreeRow:
    path = entry.path
    try:
        # Ignored files too: removing the worktree would delete them (a `.env`).
        found: Changes | None = git.changes(path, own=frozenset({MARKER}), ignored=True)
        unique = git.unique_commits(path, entry.branch) if entry.branch else 0
        when = git.last_commit_time(path, "HEAD")
    except GitError:
        found, unique, when = None, 0, None
    age = age_days(path, when)
    agent_made = worktree_of(str(path)) is not None
    dirty = found.dirty if found is not None else None
    stale = agent_made and is_stale(path.name, age_days=age, dirty=dirty, unique=unique)
    marker = read_marker(path)
    return WorktreeRow(
        path=path,
        branch=entry.branch,
        base=str(marker.get("base") or ""),
        changes=found,
        unique_commits=unique,
        age_days=age,
        agent_made=agent_made,
        owned=marker.get("tool") == "branchboard",
        stale=stale,
        sessions=_ran_in(path),
    )


@dataclass(frozen=True)
class WorktreeBadge:
    """What a session's row says when it ran in an agent worktree."""

    slug: str
    path: str
    exists: bool | None  # None: not known here (a pushed session's folder is on its machine)


def worktree_badge(session: Session) -> WorktreeBadge | None:
    """The badge of a session that ran in an agent worktree ("removed" once it is gone)."""
    place = worktree_of(session.cwd) if session.cwd else None
    if place is None:
        return None
    if session.namespace:
        return WorktreeBadge(place.slug, place.path, None)
    return WorktreeBadge(place.slug, place.path, os.path.isdir(place.path))


def grouped_with_worktrees(projects: Iterable[Project]) -> list[Project]:
    """The projects in order, each agent worktree's project moved right after its main
    repository's (when that is listed too, from the same machine) and given `worktree` (a
    `WorktreePlace`)."""
    listed = list(projects)
    by_path = {(p.namespace, p.agent, p.path.rstrip("/")): p for p in listed if p.path}
    under: dict[int, list[Project]] = {}
    for project in listed:
        project.worktree = worktree_of(project.path) if project.path else None
        top = project.worktree.top if project.worktree else None
        main = by_path.get((project.namespace, project.agent, top)) if top else None
        if main is not None and main is not project:
            under.setdefault(main.pk, []).append(project)
    moved = {p.pk for group in under.values() for p in group}
    out: list[Project] = []
    for project in listed:
        if project.pk not in moved:
            out.append(project)
            out.extend(under.get(project.pk, []))
    return out


@dataclass(frozen=True)
class NotInGit:
    """Why there are no branches to compare: a session's folder is in no git repository."""

    message: str
    not_in_git: bool = True


def worktrees_diff(a: Session, b: Session) -> BranchDiff | NotInGit | str | None:
    """The real `git diff` between the branches two sessions' working trees have checked out.

    None unless both ran in git working trees of the same repository, on two different
    branches, that are still on this machine (never for a session pushed from another:
    `git_elsewhere`); `NotInGit` when a folder is in no repository; a string says why git
    could not answer.
    """
    if git_elsewhere(a) or git_elsewhere(b):
        return None
    folders = [Path(s.cwd) for s in (a, b) if s.cwd and os.path.isdir(s.cwd)]
    if len(folders) != 2:
        return None
    try:
        if git.common_dir(folders[0]) != git.common_dir(folders[1]):
            return None
        left, right = git.current_branch(folders[0]), git.current_branch(folders[1])
        if not left or not right or left == right:
            return None
        return git.branch_diff(folders[0], left, right)
    except NotARepository as exc:
        return NotInGit(f"{exc}: there are no branches to compare.")
    except GitError as exc:
        return str(exc)
