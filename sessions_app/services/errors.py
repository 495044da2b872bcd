"""What a refused action on a session says (a branch, fork, rewind, undo, run or restore),
and the one refusal every writer checks first, a pushed session's. Nothing was written when
one is raised. Below every package that writes sessions, so the archive and the runs refuse
in the same words without importing the branching package."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..models import Session


class BranchError(Exception):
    """A refused branch, fork or rewind; the message says what to do. Nothing was written."""


class UnknownSession(BranchError):
    """No listed session has that id."""


class BranchingUnsupported(BranchError):
    """The session's agent is read here but not branched (`Agent.can_branch`)."""


class InvalidSessionId(BranchError):
    """The id is not a UUID."""


class InvalidTurn(BranchError):
    """The turn is not a whole number, or not one this action can use."""


class SourceChanged(BranchError):
    """The file is not as it was imported (or as the rewind left it)."""


class SessionBusy(BranchError):
    """A CLI may still be writing the session."""


class TargetExists(BranchError):
    """The file a new session would get exists already."""


class NothingToUndo(BranchError):
    """No rewind to undo, or its backup is gone."""


class OutsideRoots(BranchError):
    """The path lies outside the configured session roots, or is a link."""


class FileUnreadable(BranchError):
    """The source file exists but cannot be read (permissions, not a regular file)."""


class WriteCheckFailed(BranchError):
    """A file the dashboard wrote did not read back as intended; nothing was replaced."""


class PushedReadOnly(BranchError):
    """A session a machine pushed to this hub: only actions that make new files are done."""


class StaleIndex(Exception):
    """The bytes at an indexed offset are not the record the index names."""


def check_not_pushed(session: Session, action: str) -> None:
    """Refuse `action` on a session a machine pushed to this hub: its file is the
    machine's, kept byte for byte; only actions that make new files are done here.
    `action` with its article ("a restore"): the message ends "or restore it on that machine"."""
    if session.namespace:
        raise PushedReadOnly(
            f"{action} is not done on the hub: session {session.session_id} belongs to "
            f"{session.namespace}, whose file the hub keeps as pushed. Branch or fork it "
            f"here (the new session goes back to {session.namespace.partition('@')[2]}), "
            f"or {action.split(' ', 1)[-1]} it on that machine."
        )
