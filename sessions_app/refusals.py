"""One table at the edge: which refusal answers with which HTTP status and exit code.

The engine's errors say what went wrong and carry no status; pages, the JSON API
and the management commands all look the answer up here.
"""

from __future__ import annotations

from .services.branching import (
    BranchError,
    BranchingUnsupported,
    FileUnreadable,
    InvalidSessionId,
    InvalidTurn,
    NothingToUndo,
    OutsideRoots,
    PushedReadOnly,
    SessionBusy,
    SourceChanged,
    TargetExists,
    UnknownSession,
    WriteCheckFailed,
)
from .services.runs import RunBusy, RunError, RunRefused
from .services.worktrees import (
    NeedsConfirmation,
    NotAWorktree,
    WorktreeError,
    WorktreeExists,
    WorktreeRefused,
)


class BodyTooLarge(BranchError):
    """An API request body over the configured limit."""


class WorktreeForbidden(BranchError):
    """The user may branch and fork, but not make git worktrees (their own permission)."""


class LengthRequired(BranchError):
    """An API request body sent without a Content-Length."""


STATUS: dict[type[BranchError], int] = {
    BranchError: 400,
    InvalidSessionId: 400,
    BranchingUnsupported: 400,
    InvalidTurn: 400,
    OutsideRoots: 400,
    UnknownSession: 404,
    SourceChanged: 409,
    SessionBusy: 409,
    TargetExists: 409,
    NothingToUndo: 409,
    FileUnreadable: 409,
    WriteCheckFailed: 409,
    WorktreeError: 409,
    WorktreeRefused: 400,
    NotAWorktree: 400,
    WorktreeExists: 409,
    NeedsConfirmation: 409,
    WorktreeForbidden: 403,
    PushedReadOnly: 403,
    RunError: 409,
    RunRefused: 400,
    RunBusy: 409,
    LengthRequired: 411,
    BodyTooLarge: 413,
}
# Commands: 2 a bad request, 3 an unknown session, 4 a conflict with the files.
EXIT_CODES = {400: 2, 404: 3, 409: 4}


def status_of(error: BranchError) -> int:
    """The HTTP status a refusal answers with."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 400


def exit_code_of(error: BranchError) -> int:
    """The exit code a management command ends with on a refusal."""
    return EXIT_CODES.get(status_of(error), 1)
