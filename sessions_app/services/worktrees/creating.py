"""A new git worktree for a fork: planned (every refusal before anything is written), then made.

The worktree goes to `<top level>/<agent's worktree folder>/<slug>` on a new
branch `worktree-<slug>` made from the branch the source session's working tree
is on now (`git worktree add -b`, never `-B`). The first one in a repository adds
`worktrees/` to the agent folder's `.gitignore`; each gets an ownership mark in
git's admin folder of the worktree, where no commit can put one and `git add -A`
never looks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from ...formats import agent_for
from ...formats.worktrees import (
    ADMIN_MARKER,
    InvalidSlug,
    check_slug,
    inside_agent_worktree,
    new_slug,
)
from ...models import Session
from .. import git
from ..files import append_durably, create_exclusive
from ..git import Changes, GitError, NotARepository
from .errors import WorktreeError, WorktreeExists, WorktreeRefused

IGNORE_LINE = "worktrees/"


@dataclass(frozen=True)
class WorktreePlan:
    """Where a fork's worktree will be, and what it starts from."""

    slug: str
    top: Path  # the repository's top level (of the source's working tree)
    subfolder: str  # where the session ran, below `top` ("" at the top)
    old_top: str  # `top` as the session's records spell it
    path: Path
    branch: str
    base: str  # the branch (or, detached, the commit) the worktree starts from
    detached: bool
    changes: Changes  # uncommitted in the source's working tree: not carried over

    @property
    def cwd(self) -> Path:
        """Where the forked session goes on: the same subfolder, in the worktree."""
        return self.path / self.subfolder if self.subfolder else self.path


def plan_worktree(session: Session, slug: str | None) -> WorktreePlan:
    """Check everything a fork into a new worktree needs; WorktreeError says what is wrong."""
    agent = agent_for(session.agent)
    if not agent.worktree_folder:
        raise WorktreeRefused(f"{agent.label} sessions cannot be forked into a worktree")
    cwd_text = session.cwd
    if not cwd_text or not os.path.isabs(cwd_text):
        raise WorktreeRefused(f"session {session.session_id} does not say which folder it ran in")
    cwd = Path(cwd_text)
    if inside_agent_worktree(cwd):
        raise WorktreeRefused(
            f"{cwd} is already inside an agent worktree; worktrees are not nested"
        )
    try:
        top = git.toplevel(cwd)
        real_cwd = Path(os.path.realpath(cwd))
        subfolder = str(real_cwd.relative_to(top)) if real_cwd != top else ""
    except NotARepository as exc:
        raise WorktreeRefused(
            f"{exc}: only a session in a git repository can get a worktree"
        ) from None
    except ValueError:
        raise WorktreeRefused(f"{cwd} does not lie in the working tree {top}") from None
    if inside_agent_worktree(top):
        raise WorktreeRefused(f"{top} is an agent worktree; worktrees are not nested")
    old_top = cwd_text.rstrip("/")
    if subfolder:
        suffix = "/" + subfolder
        old_top = old_top[: -len(suffix)] if old_top.endswith(suffix) else str(top)
    try:
        slug = check_slug(slug) if slug else new_slug()
    except InvalidSlug as exc:
        raise WorktreeRefused(str(exc)) from None
    path = top / agent.worktree_folder / slug
    branch = f"worktree-{slug}"
    # Every check before the first write: a link met half way must leave nothing behind.
    _refuse_links(top, agent.worktree_folder)
    if os.path.lexists(path):
        raise WorktreeExists(f"{path} exists already; choose another worktree name")
    if git.branch_exists(top, branch):
        raise WorktreeExists(f"branch {branch} exists already; choose another worktree name")
    base = git.current_branch(cwd)
    detached = base is None
    return WorktreePlan(
        slug=slug,
        top=top,
        subfolder=subfolder,
        old_top=old_top,
        path=path,
        branch=branch,
        base=base or git.head_commit(cwd),
        detached=detached,
        # The agent folder's .gitignore a first worktree adds is the dashboard's doing.
        changes=git.changes(
            cwd, own=frozenset({f"{Path(agent.worktree_folder).parent}/.gitignore"})
        ),
    )


def make_worktree(plan: WorktreePlan, *, agent_name: str) -> None:
    """Create the worktree the plan describes; WorktreeError (nothing left behind) if git fails."""
    agent = agent_for(agent_name)
    # Again at the last moment: the plan's look may be a while ago.
    _refuse_links(plan.top, agent.worktree_folder)
    try:
        _ignore_worktrees(plan.top / Path(agent.worktree_folder).parent)
        plan.path.parent.mkdir(exist_ok=True)
    except OSError as exc:
        raise WorktreeError(f"{exc.strerror}: {exc.filename}; no worktree was made") from None
    if stat.S_ISLNK(os.lstat(plan.path.parent).st_mode):
        raise WorktreeRefused(f"{plan.path.parent} is a symbolic link; links are never followed")
    try:
        git.git("worktree", "add", "-b", plan.branch, str(plan.path), plan.base, cwd=plan.top)
    except GitError as exc:
        raise WorktreeError(f"{exc}; no worktree was made") from None


def _refuse_links(top: Path, worktree_folder: str) -> None:
    """The agent folder, its `.gitignore` and its worktrees folder: each missing, or a real
    folder or file; WorktreeRefused for a link (never followed) or anything else."""
    folder = top / Path(worktree_folder).parent
    for path, want in (
        (folder, stat.S_ISDIR),
        (folder / ".gitignore", stat.S_ISREG),
        (top / worktree_folder, stat.S_ISDIR),
    ):
        _refuse_link(path, want)


def _refuse_link(path: Path, want: Callable[[int], bool]) -> None:
    """Nothing at `path`, or what `want` says (a folder, a regular file); never a link."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise WorktreeRefused(f"{path} cannot be looked at ({exc.strerror})") from None
    if stat.S_ISLNK(mode):
        raise WorktreeRefused(f"{path} is a symbolic link; links are never followed")
    if not want(mode):
        kind = "folder" if want is stat.S_ISDIR else "regular file"
        raise WorktreeRefused(f"{path} is not a {kind}; nothing was written")


def write_marker(plan: WorktreePlan, *, session: Session, source: Session) -> None:
    """Say in git's admin folder of the worktree who made it, for which session."""
    data = {
        "tool": "branchboard",
        "agent": session.agent,
        "session_id": str(session.session_id),
        "source_session_id": str(source.session_id),
        "branch": plan.branch,
        "base": plan.base,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    admin = git.admin_folder(plan.path)
    if admin is None:
        raise GitError(f"{plan.path} is not a linked worktree of {plan.top}")
    _create(admin / ADMIN_MARKER, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")


def _ignore_worktrees(folder: Path) -> None:
    """`worktrees/` in `folder/.gitignore`: made if missing, appended if absent, else left."""
    if os.path.lexists(folder) and stat.S_ISLNK(os.lstat(folder).st_mode):
        raise WorktreeRefused(f"{folder} is a symbolic link; links are never followed")
    folder.mkdir(parents=True, exist_ok=True)
    _add_line(folder / ".gitignore", IGNORE_LINE)


def _add_line(path: Path, line: str) -> None:
    """`line` in the text file at `path`: created exclusively when missing, else appended
    if no line says it already; never rewritten, never through a link."""
    try:
        _create(path, (line + "\n").encode())
        return
    except FileExistsError:
        pass
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        text = f.read()
    present = {raw.strip() for raw in text.decode("utf-8", "replace").splitlines()}
    if line in present or line.rstrip("/") in present or "/" + line in present:
        return
    prefix = b"" if not text or text.endswith(b"\n") else b"\n"
    append_durably(path, prefix + line.encode() + b"\n")


def _create(path: Path, data: bytes) -> None:
    """A new file with `data` (readable by all, as git's own files are); FileExistsError if
    anything is there already."""
    with create_exclusive(path, mode=0o644) as f:
        f.write(data)
