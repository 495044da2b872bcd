"""What a refused branch, fork, rewind or undo says. Nothing was written when one is raised."""

from __future__ import annotations


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
