"""Git worktrees for forks: fork the conversation and the code together, and remove them safely.

The only code that runs git commands that write (`git worktree add`, `worktree
remove`, `branch -d`) and the only writer of files inside a repository (the
agent folder's `.gitignore`, the worktree's ownership mark in git's admin folder of
that worktree). Nothing outside the new worktree and those two files is ever written.

Modules, one rule each: `errors`, `creating` (plan, then make), `restoring` (the
files as they were at the fork's turn, from Claude Code's backups), `removing`
(the guards of a removal). Worktree names and folders are `formats.worktrees`; reading
git is `services.git`; the project page's panel is read by the selectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...formats import agent_for
from ...formats.claude.file_history import State
from ...formats.worktrees import (
    MARKER,
    InvalidSlug,
    check_slug,
    inside_agent_worktree,
    is_agent_slug,
    new_slug,
)
from ...models import Session
from .. import git
from ..audit import Actor, audit_record
from ..branching import Elsewhere, check_can_branch, refusing_on_stale, session_fork
from ..branching.inputs import ForkInput
from ..git import GitError, read_marker
from ..hub.consent import fork_made
from .creating import WorktreePlan, make_worktree, plan_worktree, write_marker
from .errors import NeedsConfirmation, NotAWorktree, WorktreeError, WorktreeExists, WorktreeRefused
from .removing import Removal, stale_worktrees_remove, worktree_remove
from .restoring import Restoration, read_state, restore_files, restore_point

__all__ = [
    "MARKER",
    "Forked",
    "InvalidSlug",
    "NeedsConfirmation",
    "NotAWorktree",
    "Removal",
    "Restoration",
    "WorktreeError",
    "WorktreeExists",
    "WorktreeFork",
    "WorktreePlan",
    "WorktreeRefused",
    "check_slug",
    "fork_where_asked",
    "inside_agent_worktree",
    "is_agent_slug",
    "new_slug",
    "read_marker",
    "stale_worktrees_remove",
    "worktree_fork",
    "worktree_plan",
    "worktree_remove",
]


@dataclass(frozen=True)
class WorktreeFork:
    """A fork made into a new worktree, and how to carry on with it."""

    session: Session
    plan: WorktreePlan
    restored: Restoration | None = None  # the files as they were at the turn, when asked


def worktree_plan(session: Session, slug: str | None = None) -> WorktreePlan:
    """What a fork of `session` into a new worktree would do; refusals raised, nothing written."""
    check_can_branch(session)
    if session.namespace:
        # Its cwd names a folder of the machine that pushed it: text, never a place the
        # hub runs git in (a repository of the hub's own disk may have the same path).
        raise WorktreeRefused(
            f"a fork into a worktree is made on the machine that holds the repository "
            f"({session.namespace}); on the hub, fork beside the session"
        )
    try:
        return plan_worktree(session, slug)
    except GitError as exc:
        raise WorktreeError(str(exc)) from None


def worktree_fork(
    *,
    session: Session,
    turn: int | None = None,
    include_turn: bool = True,
    title: str | None = None,
    slug: str | None = None,
    leave_changes: bool = False,
    with_files: bool = False,
) -> WorktreeFork:
    """Branch or fork `session` into a new git worktree of its repository.

    Uncommitted changes of the source's working tree are not in the worktree: with
    any, `leave_changes` must say that this is understood (NeedsConfirmation).
    `with_files`: the files Claude Code edited are put back as they were at the
    turn, from its backups (see `restoring`). If anything fails, the worktree and
    its branch just made are removed again.
    """
    plan = worktree_plan(session, slug)
    if plan.changes.dirty and not leave_changes:
        raise NeedsConfirmation(
            f"the working tree {plan.top} has uncommitted changes ({plan.changes.describe()}); "
            f"they will not be in the new worktree, which starts from {plan.base}: confirm to go on"
        )
    restored: Restoration | None = None
    state: State | None = None
    if with_files:
        point = restore_point(session, turn=turn, include_turn=include_turn)
        with refusing_on_stale(session):
            state, reason = read_state(session, point)
        restored = Restoration(point.label, reason=reason)
    agent = agent_for(session.agent)
    make_worktree(plan, agent_name=session.agent)
    try:
        if restored is not None and state is not None:
            try:
                restored = restore_files(session, plan, state, restored.point)
            except OSError as exc:
                raise WorktreeError(
                    f"the files could not be restored into {plan.path} ({exc}); "
                    "the worktree was taken back"
                ) from None
        elsewhere = Elsewhere(
            project_folder=Path(session.project.root) / agent.project_folder_name(str(plan.cwd)),
            old_top=plan.old_top,
            new_top=str(plan.path),
            branch=plan.branch,
        )
        new = session_fork(
            session=session,
            turn=turn,
            include_turn=include_turn,
            title=title,
            elsewhere=elsewhere,
        )
    except BaseException:
        _unmake(plan)
        raise
    try:
        write_marker(plan, session=new, source=session)
    except (OSError, GitError) as exc:
        raise WorktreeError(
            f"the fork {new.session_id} is in {plan.path}, but its marker could not be "
            f"written ({exc})"
        ) from None
    return WorktreeFork(new, plan, restored)


def _unmake(plan: WorktreePlan) -> None:
    """Take back a worktree made a moment ago (nothing of the user's is in it yet)."""
    try:
        git.git("worktree", "remove", "--force", str(plan.path), cwd=plan.top)
        git.git("branch", "-d", plan.branch, cwd=plan.top, ok=(0, 1))
    except GitError:
        pass  # the first error is the one the user needs to see


@dataclass(frozen=True)
class Forked:
    """What `fork_where_asked` made: the new session, its worktree if any, the audit's detail."""

    session: Session
    plan: WorktreePlan | None = None
    restored: Restoration | None = None
    detail: str = ""

    def audit(self, actor: Actor, *, source: Session, turn: int | None) -> None:
        """The audit entry of this fork, and on a hub who made it: a fork goes to its
        namespace's machine only as the owner allows (the same through every door)."""
        new = self.session
        audit_record(
            actor=actor, action=new.kind, session=source, result=new, turn=turn, detail=self.detail
        )
        fork_made(new, actor.user)

    def worktree_json(self) -> dict | None:
        """The worktree as the API and `fork_session --json` give it."""
        if self.plan is None:
            return None
        plan = self.plan
        info: dict = {"path": str(plan.path), "branch": plan.branch, "base": plan.base}
        if self.restored is not None:
            info["files"] = self.restored.as_json()
        return info


def fork_where_asked(
    *,
    session: Session,
    asked: ForkInput,
    worktree: str | None,
    leave_changes: bool = False,
    with_files: bool = False,
) -> Forked:
    """A fork beside its source (`worktree` None) or into a new worktree (`worktree` its
    name, "" to make one up), with its files as they were at the turn if `with_files`.

    The one entry for the pages, the API and `fork_session`.
    """
    if worktree is None:
        if with_files:
            raise WorktreeRefused(
                "restoring the files needs a new worktree to put them in: "
                "nothing outside one is ever written"
            )
        new = session_fork(
            session=session,
            turn=asked.turn,
            include_turn=asked.include_turn,
            title=asked.title,
            leaf=asked.leaf,
        )
        return Forked(new)
    if asked.leaf is not None:
        raise WorktreeRefused(
            "a branch brought back goes on beside its source; fork it into a worktree after"
        )
    made = worktree_fork(
        session=session,
        turn=asked.turn,
        include_turn=asked.include_turn,
        title=asked.title,
        slug=worktree or None,
        leave_changes=leave_changes,
        with_files=with_files,
    )
    plan = made.plan
    detail = f"worktree {plan.path} on branch {plan.branch} from {plan.base}"
    if made.restored is not None:
        count = len(made.restored.restored) + len(made.restored.removed)
        detail += f"; files {made.restored.point}: {count} restored or removed"
    return Forked(made.session, plan, made.restored, detail)
