"""Git worktrees as the CLIs lay them out: names, folders, and the dashboard's marker.

Pure rules, no I/O: what a given worktree name (slug) may be, a fresh one when none
is given, and whether a path lies in an agent's worktree folder.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import NamedTuple

from . import REGISTRY

SLUG_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
# The CLIs' own short-lived worktrees: `agent-` and 7 hex digits. The prefix is theirs.
AGENT_SLUG_RE = re.compile(r"agent-[0-9a-f]{7}")
RESERVED_PREFIX = "agent-"
# An agent's own worktree this old (in days), with nothing in it, is stale.
STALE_DAYS = 30
# The file that says the dashboard made a worktree, in git's admin folder of that
# worktree (`<repository>/.git/worktrees/<name>/`), where no commit can put one.
ADMIN_MARKER = "branchboard-worktree.json"
# Where earlier versions put it: in the checkout, which a commit can fill. Still read
# (only untracked) for the worktrees they made; never written.
MARKER = ".branchboard-worktree.json"


class InvalidSlug(ValueError):
    """The slug breaks a rule; the message says which."""


def check_slug(slug: str) -> str:
    """`slug` if it may name a new worktree; InvalidSlug (saying why) if not."""
    if not SLUG_RE.fullmatch(slug):
        raise InvalidSlug(
            f"worktree name {slug!r}: 1 to 64 letters, digits, '.', '_' or '-' (no '/', no spaces)"
        )
    if slug[0] in ".-":
        raise InvalidSlug(f"worktree name {slug!r}: must not start with '.' or '-'")
    if ".." in slug:
        raise InvalidSlug(f"worktree name {slug!r}: must not contain '..'")
    # git's check-ref-format refuses these in a branch name (`worktree-<slug>`); the
    # others it refuses (spaces, '~^:?*[\\', '@{', control characters) the pattern does.
    if slug.endswith("."):
        raise InvalidSlug(f"worktree name {slug!r}: must not end with '.'")
    if slug.endswith(".lock"):
        raise InvalidSlug(f"worktree name {slug!r}: must not end with '.lock'")
    if slug.startswith(RESERVED_PREFIX):
        raise InvalidSlug(
            f"worktree name {slug!r}: the '{RESERVED_PREFIX}' prefix is kept for the CLIs' "
            "own worktrees"
        )
    return slug


def new_slug() -> str:
    """A fresh name from a strong random source: `fork-` and 8 hex digits."""
    return f"fork-{secrets.token_hex(4)}"


def is_agent_slug(slug: str) -> bool:
    """Whether a worktree is one of the CLIs' short-lived agent worktrees."""
    return AGENT_SLUG_RE.fullmatch(slug) is not None


def is_stale(slug: str, *, age_days: float | None, dirty: bool | None, unique: int) -> bool:
    """An agent worktree (`agent-` + 7 hex) untouched for STALE_DAYS, with no uncommitted
    change and no commit of its own; anything unknown (None) is not stale."""
    return (
        is_agent_slug(slug)
        and age_days is not None
        and age_days > STALE_DAYS
        and dirty is False
        and unique == 0
    )


def worktree_folders() -> list[str]:
    """Every agent's worktree folder, relative to a repository's top level."""
    return [a.worktree_folder for a in REGISTRY.values() if a.worktree_folder]


class WorktreePlace(NamedTuple):
    """Where a path lies in an agent worktree."""

    top: str  # the repository's top level
    slug: str
    path: str  # the worktree's folder: `<top>/<agent folder>/<slug>`


def worktree_of(cwd: str | Path) -> WorktreePlace | None:
    """The agent worktree `cwd` lies in, or None."""
    text = str(cwd).rstrip("/") + "/"
    for folder in worktree_folders():
        top, found, rest = text.partition(f"/{folder}/")
        slug = rest.split("/", 1)[0]
        if found and slug:
            return WorktreePlace(top or "/", slug, f"{top}/{folder}/{slug}")
    return None


def inside_agent_worktree(path: str | Path) -> bool:
    """Whether `path` lies inside a worktree an agent keeps (`.../.claude/worktrees/<slug>`)."""
    return worktree_of(path) is not None
