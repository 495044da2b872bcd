"""Worktree names: what a given slug may be, and a fresh one when none is given."""

from __future__ import annotations

import re
import secrets

SLUG_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
# The CLIs' own short-lived worktrees: `agent-` and 7 hex digits. The prefix is theirs.
AGENT_SLUG_RE = re.compile(r"agent-[0-9a-f]{7}")
RESERVED_PREFIX = "agent-"


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
