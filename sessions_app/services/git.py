"""Running git: the one place the dashboard calls it, with fixed arguments and no shell.

Every call runs `git -C <folder> ...` with a bounded time, no terminal prompts
and none of the caller's `GIT_*` variables, so that the repository is the one
the folder lies in. Reads pass `--no-optional-locks` so that looking never
writes (git's status refreshes its index otherwise).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import orjson

from ..formats.worktrees import ADMIN_MARKER, MARKER
from .git_answers import IGNORED_SHOWN as IGNORED_SHOWN
from .git_answers import BranchDiff as BranchDiff
from .git_answers import Changes as Changes
from .git_answers import WorktreeEntry as WorktreeEntry

GIT_TIMEOUT = 60.0
# Conflicted entries in `git status --porcelain` (both sides touched the path).
CONFLICT_CODES = frozenset({"DD", "AU", "UD", "UA", "DU", "AA", "UU"})


class GitError(Exception):
    """git failed or could not be run; the message says which command and why."""


class NotARepository(GitError):
    """The folder is not inside a git working tree."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_OPTIONAL_LOCKS="0")
    return env


def git(*args: str, cwd: Path, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    """Run `git -C cwd args...`; GitError unless its exit status is in `ok`."""
    command = ["git", "-C", str(cwd), *args]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=GIT_TIMEOUT,
            env=_env(),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed on this machine") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"`git {' '.join(args)}` in {cwd} took over {GIT_TIMEOUT:.0f} s") from None
    if done.returncode not in ok:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(
            f"`git {' '.join(args)}` in {cwd} failed: {message[-1] if message else done.returncode}"
        )
    return done


def toplevel(folder: Path) -> Path:
    """The top level of the working tree `folder` lies in; NotARepository if none."""
    if not folder.is_dir():
        raise NotARepository(f"{folder} is not a folder on this machine")
    try:
        out = git("rev-parse", "--show-toplevel", cwd=folder).stdout.strip()
    except GitError:
        raise NotARepository(f"{folder} is not inside a git repository") from None
    if not out:
        raise NotARepository(f"{folder} is not inside a git working tree")
    return Path(out)


def common_dir(folder: Path) -> Path:
    """The repository's shared git folder (the main working tree's `.git`); NotARepository
    when `folder` lies in none."""
    try:
        out = git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=folder).stdout
    except GitError as exc:
        # git's own words (LC_ALL=C, `_env`): a folder outside git is a fact, not a failure.
        if "not a git repository" in str(exc):
            raise NotARepository(f"{folder} is not in a git repository") from None
        raise
    return Path(out.strip())


def current_branch(folder: Path) -> str | None:
    """The branch the working tree at `folder` has checked out; None when HEAD is detached."""
    done = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=folder, ok=(0, 1))
    return done.stdout.strip() or None if done.returncode == 0 else None


def head_commit(folder: Path) -> str:
    return git("rev-parse", "--verify", "HEAD", cwd=folder).stdout.strip()


def branch_exists(folder: Path, branch: str) -> bool:
    done = git("show-ref", "--verify", "--quiet", f"refs/heads/{branch}", cwd=folder, ok=(0, 1))
    return done.returncode == 0


def changes(folder: Path, *, own: frozenset[str] = frozenset(), ignored: bool = False) -> Changes:
    """The working tree's uncommitted changes, and with `ignored` the files git ignores
    (an ignored folder as one entry); the files `own` names, relative to the top level,
    do not count (files the dashboard made)."""
    # "matching" names an ignored folder once instead of every file in it (node_modules/).
    show = ["--ignored=matching"] if ignored else []
    out = git("status", "--porcelain=v1", "-z", "--untracked-files=all", *show, cwd=folder).stdout
    tracked = untracked = conflicted = 0
    ignored_found: list[str] = []
    entries = iter(out.split("\0"))
    for entry in entries:
        if len(entry) < 3:
            continue
        code, name = entry[:2], entry[3:]
        if code in ("??", "!!") and name in own:
            continue
        if code == "!!":
            ignored_found.append(name)
        elif code == "??":
            untracked += 1
        elif code in CONFLICT_CODES:
            conflicted += 1
        else:
            tracked += 1
            if code[0] in "RC":
                next(entries, None)  # a rename's or copy's source path follows
    return Changes(tracked, untracked, conflicted, tuple(sorted(ignored_found)))


def unique_commits(folder: Path, branch: str) -> int:
    """Commits on `branch` that no other branch and no remote-tracking branch holds."""
    out = git(
        "rev-list",
        "--count",
        f"refs/heads/{branch}",
        "--not",
        # --exclude before --branches takes a glob without refs/heads/: escape the name.
        "--exclude=" + re.sub(r"([*?\[\\])", r"\\\1", branch),
        "--branches",
        "--remotes",
        cwd=folder,
    ).stdout
    return int(out.strip() or 0)


def branch_diff(folder: Path, left: str, right: str, *, limit: int = 200_000) -> BranchDiff:
    """The diff from branch `left` to branch `right` (committed work only), renames found."""
    refs = (f"refs/heads/{left}", f"refs/heads/{right}")
    options = ("--no-color", "--no-ext-diff", "--no-textconv", "-M")
    stat = git("diff", *options, "--stat=120", *refs, "--", cwd=folder).stdout
    patch = git("diff", *options, *refs, "--", cwd=folder).stdout
    return BranchDiff(left, right, stat[:limit], patch[:limit], len(patch) > limit)


def worktrees(folder: Path) -> list[WorktreeEntry]:
    """Every working tree of the repository `folder` belongs to, the main one first."""
    out = git("worktree", "list", "--porcelain", "-z", cwd=folder).stdout
    found: list[WorktreeEntry] = []
    fields: dict[str, str] = {}
    for item in [*out.split("\0"), ""]:
        if item:
            key, _, value = item.partition(" ")
            fields[key] = value
            continue
        if "worktree" in fields:
            branch = fields.get("branch", "")
            found.append(
                WorktreeEntry(
                    path=Path(fields["worktree"]),
                    head=fields.get("HEAD", ""),
                    branch=branch.removeprefix("refs/heads/") if branch else None,
                    main=not found,
                    prunable="prunable" in fields,
                )
            )
        fields = {}
    return found


def last_commit_time(folder: Path, ref: str) -> int | None:
    """The committer time (Unix seconds) of `ref`'s commit."""
    done = git("log", "-1", "--format=%ct", ref, "--", cwd=folder, ok=(0, 128))
    out = done.stdout.strip()
    return int(out) if done.returncode == 0 and out.isdigit() else None


def admin_folder(worktree: Path) -> Path | None:
    """git's own folder for the linked worktree at `worktree` (`<common>/worktrees/<name>`),
    or None when `worktree` is no linked worktree (the main one, not a repository)."""
    done = git(
        "rev-parse",
        "--path-format=absolute",
        "--git-dir",
        "--git-common-dir",
        cwd=worktree,
        ok=(0, 128),
    )
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 2:
        return None
    folder, common = (Path(os.path.realpath(line)) for line in lines)
    # Only git's worktrees folder: never anything the checkout itself holds.
    return folder if folder.parent == common / "worktrees" else None


def read_marker(worktree: Path) -> dict:
    """The dashboard's ownership mark of the worktree at `worktree` ({} when none).

    Read from git's admin folder of the worktree, which no commit reaches. A worktree an
    earlier version made has it only in the checkout: that one counts while git does not
    track it (a committed one is anyone's) and the worktree has its admin folder.
    """
    try:
        admin = admin_folder(worktree)
    except GitError:
        return {}
    if admin is None:
        return {}
    mark = _read_json(admin / ADMIN_MARKER)
    if mark or os.path.lexists(admin / ADMIN_MARKER):
        return mark
    try:
        tracked = git("ls-files", "-z", "--", MARKER, cwd=worktree).stdout
    except GitError:
        return {}
    return {} if tracked else _read_json(worktree / MARKER)


def _read_json(path: Path) -> dict:
    """The JSON object in the file at `path` ({} when none, unreadable, or a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = orjson.loads(f.read(1 << 16))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def age_days(worktree: Path, head_time: int | None) -> float | None:
    """Days since the working tree last changed: its folder or its HEAD commit, the newer."""
    try:
        changed = os.stat(worktree).st_mtime
    except OSError:
        return None
    newest = max(changed, head_time or 0)
    return (time.time() - newest) / 86400
