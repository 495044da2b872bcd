"""Indexing what a hub receives, in the request that brought it: its records, then its
search words and usage, so a pushed line is found and priced as soon as its push returns.

A whole file of more than INLINE_CATCH_UP bytes has its records indexed by its commit
(its pages show it at once) and its search words and usage by a request of their own,
which the push sends next (`catch_up`): no one request does all of a big file's work."""

from __future__ import annotations

from pathlib import Path

from ...models import Session
from ..discovery.at_path import discover_path
from ..importing import ImportReport, projects_refresh, session_file_import
from ..importing.session_row import cli_branches_link
from ..watching import CATCH_UP


class NotImported(Exception):
    """The bytes are stored, but the file could not be indexed (the message says why)."""

    status = 422


INLINE_CATCH_UP = 16 << 20


def hub_import(root: Path, target: Path, *, catch_up: bool = True) -> Session:
    """Index a file just received (the import's own rules: grown, rewritten, new), then,
    with `catch_up`, its search words and usage."""
    found, problems, _ = discover_path(root, target)
    # A big file's search texts come with its search words, in the request after this one.
    report = ImportReport(texts=catch_up)
    session = None
    for source in found:  # the file at `target`, if it is a session file
        session = session_file_import(source=source, report=report)
    if session is None:
        said = report.errors + problems or [f"{target.name}: not a session file"]
        raise NotImported(f"stored, but not imported: {'; '.join(said[:3])}")
    projects_refresh(project_ids=[session.project_id])
    cli_branches_link(report.unlinked)
    if catch_up:
        session_catch_up(session)
    return session


def session_catch_up(session: Session) -> None:
    """Bring the session's search words and usage up to its records."""
    for _, refresh in CATCH_UP:
        refresh(session_ids=[session.pk])
