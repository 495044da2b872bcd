"""Indexing what a hub receives, in the request that brought it: its records, then its
search words and usage, so a pushed line is found and priced as soon as its push returns."""

from __future__ import annotations

from pathlib import Path

from ...models import Session
from ..discovery_path import discover_path
from ..importing import ImportReport, projects_refresh, session_file_import
from ..importing.session_row import cli_branches_link
from ..watching import CATCH_UP


class NotImported(Exception):
    """The bytes are stored, but the file could not be indexed (the message says why)."""

    status = 422


def hub_import(root: Path, target: Path) -> Session | None:
    """Index a file just received (the import's own rules: grown, rewritten, new), then
    its search words and usage, so it is found and priced as soon as its push returns."""
    found, problems, _ = discover_path(root, target)
    report = ImportReport()
    session = None
    for source in found:  # the file at `target`, if it is a session file
        session = session_file_import(source=source, report=report)
    if session is None:
        said = report.errors + problems or [f"{target.name}: not a session file"]
        raise NotImported(f"stored, but not imported: {'; '.join(said[:3])}")
    projects_refresh(project_ids=[session.project_id])
    cli_branches_link(report.unlinked)
    for _, refresh in CATCH_UP:
        refresh(session_ids=[session.pk])
    return session
