"""What a refused worktree action says. Like a refused fork, it leaves nothing behind."""

from __future__ import annotations

from ..branching import BranchError


class WorktreeError(BranchError):
    """A worktree action failed or was refused; the message says what to do."""


class WorktreeRefused(WorktreeError):
    """The session or folder cannot have this done (no repository, nested, bad name...)."""


class WorktreeExists(WorktreeError):
    """The worktree's folder or branch exists already."""


class NeedsConfirmation(WorktreeError):
    """The action would leave something out or throw something away: confirm it first."""


class NotAWorktree(WorktreeError):
    """The folder is not a worktree the dashboard may remove."""
