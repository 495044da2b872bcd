"""The models, one module per concept; importing them here lets Django find them.

`from sessions_app.models import Session` works for every model, as before.
"""

from __future__ import annotations

from sessions_app.models.sessions import ACTIVITY, TITLE_LIMIT, Project, Record, Session

from .access import ApiToken, AuditEntry
from .archive import ArchivePiece
from .hub import HubFile, HubFork, HubNamespace
from .import_status import ImportStatus
from .runs import Run
from .search import SearchChunk, SearchText
from .skips import SkippedFile
from .usage import Usage

__all__ = [
    "ACTIVITY",
    "TITLE_LIMIT",
    "ApiToken",
    "ArchivePiece",
    "AuditEntry",
    "HubFile",
    "HubFork",
    "HubNamespace",
    "ImportStatus",
    "Project",
    "Record",
    "Run",
    "SearchChunk",
    "SearchText",
    "Session",
    "SkippedFile",
    "Usage",
]
