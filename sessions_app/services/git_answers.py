"""What git's reads give, as plain data: a working tree's changes counted apart, the diff
between two branches, the worktree list.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Ignored files a message names; the rest are counted.
IGNORED_SHOWN = 20


@dataclass(frozen=True)
class Changes:
    """Uncommitted changes of a working tree, counted apart; ignored files named."""

    tracked: int = 0
    untracked: int = 0
    conflicted: int = 0
    # Files and folders git ignores (`.env`, `build/`): counted only when asked for,
    # because `git worktree remove` deletes them as surely as untracked ones.
    ignored: tuple[str, ...] = ()

    @property
    def dirty(self) -> bool:
        return bool(self.tracked or self.untracked or self.conflicted or self.ignored)

    def describe(self, limit: int = IGNORED_SHOWN) -> str:
        """In words, e.g. `1 changed, 2 ignored: .env, build/` (at most `limit` names)."""
        parts = [
            f"{n} {label}"
            for n, label in (
                (self.tracked, "changed"),
                (self.untracked, "untracked"),
                (self.conflicted, "conflicted"),
                (len(self.ignored), "ignored"),
            )
            if n
        ]
        if self.ignored:
            more = len(self.ignored) - limit
            parts[-1] += ": " + ", ".join(self.ignored[:limit])
            parts[-1] += f" and {more} more" if more > 0 else ""
        return ", ".join(parts) or "clean"


@dataclass(frozen=True)
class BranchDiff:
    """What `git diff left right` says between two branches' commits, cut at a size."""

    left: str
    right: str
    stat: str
    patch: str
    cut: bool  # the patch was longer than shown


@dataclass(frozen=True)
class WorktreeEntry:
    """One working tree `git worktree list` reports."""

    path: Path
    head: str
    branch: str | None  # None: detached
    main: bool
    prunable: bool
