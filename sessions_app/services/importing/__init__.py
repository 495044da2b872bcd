"""Importing session files into the database, incrementally.

An unchanged file (same size, mtime and inode) is skipped without being opened; a
file that provably only grew is read from the last imported byte; anything else
is imported again from the start (the rule is `importing.plan`). Each file is
imported in its own transaction, so a failure leaves what was imported before
untouched, and a file that cannot be imported is reported and skipped: one bad
file never stops the import.

Modules, one rule each: `report` (what a run did), `indexing` (one open file:
plan, read, analyse, write), `reading` (the line reader and the session facts it
collects), `storing` (record rows), `session_row` (the session row), `skips`
(files left out on purpose, said once and not opened again). Whether a
file is skipped, appended to or read again is `services.importing.plan`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Max, OuterRef, Subquery
from django.db.models.functions import Coalesce

from ...models import Project, Session
from ..discovery import RootError, SessionFile, discover
from ..hub_folder import namespace_of
from ..progress import ImportTracker
from ..roots import UnsafePath, open_regular
from ..searching import words_kick
from ..searching.texts_index import texts_index_bulk
from .archiving import KeptFiles
from .indexing import Indexed, import_open_file
from .naming import _discover_named as _discover_named
from .naming import _named_gone_mark as _named_gone_mark
from .report import ImportReport
from .session_row import cli_branches_link, head_digest
from .skips import LeftOut
from .storing import RECORD_COLUMNS, records_insert

__all__ = [
    "RECORD_COLUMNS",
    "ImportReport",
    "Indexed",
    "Progress",
    "head_digest",
    "projects_refresh",
    "records_insert",
    "session_file_import",
    "session_file_index",
    "sessions_import",
]

Progress = Callable[[SessionFile, int], None]
# Seconds between recounts of the projects during a pass (their session counts).
RECOUNT_EVERY = 2.0


def sessions_import(
    *,
    roots: Iterable[Path],
    paths: Iterable[Path] | None = None,
    progress: Progress | None = None,
    tracker: ImportTracker | None = None,
) -> ImportReport:
    """Import every session file under `roots`, newest first; problems are reported, never fatal.

    `paths`: import only what is at these paths (files or folders, as the watcher's
    events name them), by the rules that find every file; those under no root are
    ignored. `tracker` is told the pass's progress, for the pages to show while it runs.
    """
    report = ImportReport()
    found: list[SessionFile] = []
    scanned: list[Path] = []  # roots looked through whole, where a file missing is gone
    left_out = LeftOut()
    named = None if paths is None else sorted({Path(p) for p in paths})
    if tracker is not None and named is None:
        tracker.starting()  # looking through every root takes a while: shown as running
    for root in roots:
        try:
            if named is None:
                files, problems, misnamed = discover(Path(root))
            else:
                files, problems, misnamed = _discover_named(Path(root), named)
        except RootError as exc:
            report.errors.append(str(exc))
            continue
        if named is None:
            scanned.append(Path(root))
        found.extend(files)
        report.errors.extend(problems)
        left_out.misnamed(misnamed, report)
    # Sessions first, so a subagent file finds its parent already imported; the newest
    # first, so a first import behind the pages shows what people want first, first.
    found.sort(key=lambda f: (f.is_subagent, -_mtime(f.path)))
    if tracker is not None:
        tracker.begin(found)
    # One query for the import state of every known file: an unchanged file then
    # costs a stat() and nothing else. Named paths: only theirs, whatever the index holds.
    rows = Session.objects.all()
    if named is not None:
        rows = rows.filter(path__in=[str(f.path) for f in found])
    known = {}
    kept = KeptFiles()  # what the archive and the removal marks need, from the same query
    for pk, path, size, mtime, inode, imported, removed in rows.values_list(
        "pk",
        "path",
        "file_size",
        "file_mtime_ns",
        "file_inode",
        "bytes_imported",
        "file_removed_at",
    ):
        known[path] = (size, mtime, inode)
        kept.add(pk, path, imported, removed)
    kept.archive_state(report, named=named is not None)
    touched: set[int] = set()
    counted_at = time.monotonic()
    # A first import: the texts' trigram index is built once at the end, not row by row.
    with texts_index_bulk(_new_bytes(found, known)):
        for source in found:
            report.files += 1
            report.subagent_files += source.is_subagent
            state = known.get(str(source.path))
            if state is not None and _unchanged(source.path, state):
                report.skipped += 1
                kept.catch_up(source, report)
            elif state is None and left_out.passed_over(source, report):
                pass  # said once; not opened again while it stays as it is
            elif (session := session_file_import(source=source, report=report)) is not None:
                touched.add(session.project_id)
                report.session_pks.append(session.pk)
                left_out.imported(session)
                words_kick()  # its search texts' words go in behind, on the other core
            if progress is not None or tracker is not None:
                size = _size(source.path)
                if progress is not None:
                    progress(source, size)
                if tracker is not None:
                    tracker.advance(size)
            if touched and time.monotonic() - counted_at > RECOUNT_EVERY:
                # A long pass: the project list shows the sessions imported so far.
                projects_refresh(project_ids=touched)
                touched.clear()
                counted_at = time.monotonic()
    kept.removals_mark(found, scanned, report)
    if named is not None:
        _named_gone_mark(named, roots, report)
    cli_branches_link(report.unlinked)
    projects_refresh(project_ids=touched)
    left_out.forget_gone()
    return report


def _new_bytes(found: list[SessionFile], known: dict[str, tuple[int, int, int]]) -> int:
    """PostgreSQL: about how many bytes of session files the pass is to read."""
    if connection.vendor != "postgresql":
        return 0
    total = 0
    for source in found:
        state = known.get(str(source.path))
        size = _size(source.path)
        if state is None or not _unchanged(source.path, state):
            total += size - state[0] if state is not None and size > state[0] else size
    return total


def _mtime(path: Path) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def _unchanged(path: Path, state: tuple[int, int, int]) -> bool:
    try:
        stat = os.lstat(path)
    except OSError:
        return False  # the per-file import reports it
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino) == state


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def projects_refresh(*, project_ids: Iterable[int]) -> None:
    """Recount the sessions and last activity of the given projects, in one statement."""
    ids = list(project_ids)
    if not ids:
        return
    listed = Session.objects.filter(project=OuterRef("pk"), is_subagent=False).order_by()
    per_project = listed.values("project")
    latest_cwd = listed.exclude(cwd="").order_by("-updated_at").values("cwd")[:1]
    Project.objects.filter(id__in=ids).update(
        session_count=Coalesce(Subquery(per_project.annotate(n=Count("pk")).values("n")), 0),
        last_activity=Subquery(per_project.annotate(last=Max("updated_at")).values("last")),
        path=Coalesce(Subquery(latest_cwd), F("path")),
    )


def _commit_without_waiting() -> None:
    """Let this transaction's commit return before its WAL record reaches the disk.

    The index is rebuilt from the files whenever it is behind them, so a crash may
    cost it its last commits but never its consistency: this is what SQLite in WAL
    mode with synchronous=NORMAL already does, and it spares PostgreSQL one fsync
    per imported file. Only for a transaction of the import's own.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def session_file_import(*, source: SessionFile, report: ImportReport) -> Session | None:
    """Import one file; returns its session, or None when it could not be read."""
    indexed = session_file_index(source=source, report=report)
    return indexed.session if indexed is not None else None


def session_file_index(
    *,
    source: SessionFile,
    report: ImportReport,
    read_from: Path | None = None,
    full: bool = False,
) -> Indexed | None:
    """Bring the index of one file up to date; None (and a report entry) when it cannot be.

    `read_from` names another file to read in its place: the dashboard indexes a
    file it writes from the temporary file, before that is renamed into place.
    `full` reads the file from the start whatever its state says (the index was
    found wrong about it).
    """
    path = source.path
    try:
        f = open_regular(read_from or path, root=source.root)
    except FileNotFoundError:
        report.errors.append(f"{path}: file vanished before it could be read; nothing changed")
        return None
    except UnsafePath as exc:
        report.errors.append(f"{exc}; skipped")
        return None
    except OSError as exc:
        report.errors.append(f"{path}: cannot read ({exc.strerror}); skipped")
        return None
    outermost = not connection.in_atomic_block
    # What the file adds to the counts, taken back if its transaction is rolled back.
    counts = (report.sessions, report.subagents, report.records, report.invalid)
    try:
        with f, transaction.atomic():
            if outermost:
                _commit_without_waiting()
            return import_open_file(source, f, report, fresh=full or read_from is not None)
    except Exception as exc:  # one bad file never stops the import
        report.sessions, report.subagents, report.records, report.invalid = counts
        _failure_report(source, exc, report)
    return None


def _failure_report(source: SessionFile, exc: Exception, report: ImportReport) -> None:
    """Say why the file's import was rolled back."""
    path = source.path
    if isinstance(exc, OSError):
        report.errors.append(f"{path}: cannot read ({exc.strerror}); nothing changed")
    elif isinstance(exc, IntegrityError):
        other = (
            Session.objects.listed()
            .filter(session_id=source.session_id, namespace=namespace_of(source.root))
            .exclude(path=str(path))
            .first()
            if source.session_id
            else None
        )
        if other is not None:
            report.errors.append(f"{path}: session id already imported from {other.path}; skipped")
        else:
            report.errors.append(f"{path}: could not be imported ({exc}); skipped")
    else:
        problem = f"{type(exc).__name__}: {exc}"
        report.errors.append(f"{path}: could not be imported ({problem}); skipped")
