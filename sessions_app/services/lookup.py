"""Finding the session a command means: by id, or by a file on disk (imported first)."""

from __future__ import annotations

from pathlib import Path

from ..formats import QWEN, detect_agent_from_path, is_session_id
from ..models import Session
from .branching import InvalidSessionId, UnknownSession, session_lookup
from .discovery import SessionFile
from .importing import ImportReport, projects_refresh, session_file_import


def session_resolve(*, ref: str) -> Session:
    """The session with id `ref`, or the one in the .jsonl file at path `ref`."""
    if ref.endswith(".jsonl") or "/" in ref:
        return _session_from_file(Path(ref))
    return session_lookup(ref=ref)


def _session_from_file(path: Path) -> Session:
    path = path.expanduser().absolute()
    if not path.is_file():
        raise UnknownSession(f"{path}: no such session file")
    if path.suffix != ".jsonl" or not is_session_id(path.stem):
        raise InvalidSessionId(f"{path}: a session file is named <session id>.jsonl")
    agent = detect_agent_from_path(path)
    folder = path.parent.parent if agent == QWEN else path.parent
    report = ImportReport()
    source = SessionFile(path, agent, folder.parent, folder, path.stem.lower())
    session = session_file_import(source=source, report=report)
    if session is None:
        raise UnknownSession("; ".join(report.errors) or f"{path}: could not be imported")
    projects_refresh(project_ids=[session.project_id])
    return Session.objects.select_related("project").get(pk=session.pk)
