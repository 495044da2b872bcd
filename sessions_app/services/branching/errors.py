"""What a refused branch, fork, rewind or undo says. Nothing was written when one is raised."""

from __future__ import annotations


class BranchError(Exception):
    """A refused branch, fork or rewind; the message says what to do. Nothing was written."""

    status = 400


class UnknownSession(BranchError):
    status = 404


class InvalidSessionId(BranchError):
    status = 400


class InvalidTurn(BranchError):
    status = 400


class SourceChanged(BranchError):
    status = 409


class SessionBusy(BranchError):
    status = 409


class TargetExists(BranchError):
    status = 409


class NothingToUndo(BranchError):
    status = 409


class OutsideRoots(BranchError):
    status = 400


class FileUnreadable(BranchError):
    """The source file exists but cannot be read (permissions, not a regular file)."""

    status = 409


class WriteCheckFailed(BranchError):
    """A file the dashboard wrote did not read back as intended; nothing was replaced."""

    status = 409


class StaleIndex(Exception):
    """The bytes at an indexed offset are not the record the index names."""
