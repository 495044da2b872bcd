"""The import's hooks into the archive, and the marks of files gone; never why an import fails."""

from __future__ import annotations

import os
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from django.db import DatabaseError, transaction
from django.utils import timezone

from ...formats import agent_for, agents
from ...formats.session_folders import keeps_session_folders, session_folder
from ...models import Session
from ...models.archive import ArchivedFile
from ..archive import archive_covers, archive_enabled, archive_ends, archive_extend, archive_open
from ..archive.files import archive_file_history, history_folder
from ..archive.making import Ahead
from ..archive.sidecars import sidecars_keep
from ..archive.versions import keep_earlier_version
from ..discovery import SessionFile
from ..roots import UnsafePath, open_regular, resolve_root
from .report import ImportReport


def archive_keep(
    session: Session,
    f: BinaryIO,
    report: ImportReport,
    *,
    fresh: bool,
    new: bool = False,
    ahead: Future[Ahead] | None = None,
) -> None:
    """Archive what the import just indexed; a failure is reported and the import goes on.

    `new`: the session row was made by this import (it has no pieces yet). `ahead`: the
    file's pieces, made in a thread while the import read it (`pieces_ahead`)."""
    try:
        if new or fresh:
            end: int | None = 0
        elif report.archive_ends_known:
            end = report.archive_ends.get(session.pk, 0)
        else:
            end = None
        if fresh and not new:  # a file rewritten in place: its earlier bytes first
            problem = keep_earlier_version(session, f)
            if problem:
                report.errors.append(problem)
        made = _made(ahead)
        added, now = archive_extend(session=session, f=f, fresh=fresh, end=end, ahead=made)
        report.archived += added
    except DatabaseError:
        raise  # the transaction cannot go on: the file's import is rolled back and reported
    except Exception as exc:  # the index stands without its archive
        report.errors.append(f"{session.path}: not archived ({type(exc).__name__}: {exc})")
    else:
        report.archive_ends[session.pk] = now  # for a later read of the same file in the pass
    history_keep(session, report)
    folder_keep(session, report)


def _made(ahead: Future[Ahead] | None) -> Ahead | None:
    """The pieces made ahead; None when there are none (the archive reads the file itself)."""
    try:
        return ahead.result() if ahead is not None else None
    except OSError:
        return None


def history_keep(session: Session, report: ImportReport) -> None:
    """Archive the session's file-history backups not held yet; problems are reported."""
    try:
        kept = archive_file_history(session=session)
    except DatabaseError:
        raise
    except Exception as exc:  # the index stands without them
        report.errors.append(f"{session.path}: file backups not archived ({exc})")
        return
    report.archived += kept.raw
    report.errors += kept.problems


def folder_keep(session: Session, report: ImportReport) -> None:
    """Archive the files of the folder the session (or its parent) owns that are new or
    changed; problems are reported."""
    try:
        kept = sidecars_keep(session=session)
    except DatabaseError:
        raise
    except Exception as exc:  # the index stands without them
        report.errors.append(f"{session.path}: the session's folder not archived ({exc})")
        return
    report.archived += kept.raw
    report.errors += kept.problems


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return -1


class RemovedSessionKept(Exception):
    """A new file at the path of a session whose file was removed: not imported over it."""


def removed_session_guard(session: Session, f: BinaryIO, *, rewritten: bool) -> None:
    """Refuse to read a new file over a session whose file was removed.

    The archive holds that session's only copy; a file that appears at its path with other
    bytes (a pull, a CLI's new file) would replace its rows and pieces. It is refused, and
    said so, until the user moves it away: the old session stays as it was. A file that
    starts with the archived bytes (the session's own, copied back) is the session again.
    """
    if not rewritten or session.file_removed_at is None or _starts_with_archive(session, f):
        return
    raise RemovedSessionKept(
        f"a new file appeared where session {session.session_id} was, whose file was "
        "removed; that session is kept (the archive holds it) and this file is not "
        "imported: move it elsewhere to import it"
    )


def _starts_with_archive(session: Session, f: BinaryIO) -> bool:
    if not archive_covers(session):
        return False
    try:
        with archive_open(session) as kept:
            f.seek(0)
            left = session.bytes_imported
            while left:
                block = kept.read(min(left, 1 << 20))
                if not block or f.read(len(block)) != block:
                    return False
                left -= len(block)
    except Exception:  # a damaged archive: the file is not taken for the session
        return False
    finally:
        f.seek(0)
    return True


class KeptFiles:
    """What a pass knows of the indexed files for the archive and the removal marks,
    gathered from the query that reads their import state (no query of its own)."""

    def __init__(self) -> None:
        self.imported: dict[str, tuple[int, int]] = {}  # path: (row, bytes imported)
        self.removed: dict[str, int] = {}  # path: row, of files marked gone
        self.present: list[tuple[int, str]] = []  # (row, path) of files not marked gone
        self.behind: dict[str, int] = {}  # path: row, of unchanged files not archived whole
        # path: row, of sessions with file backups of which the archive holds none yet
        self.history_behind: dict[str, tuple[int, Path]] = {}
        # path: (row, folder), of sessions of which the archive holds no file of their folder
        self.folder_behind: dict[str, tuple[int, Path]] = {}

    def add(self, pk: int, path: str, imported: int, removed: datetime | None) -> None:
        """One indexed file."""
        self.imported[path] = (pk, imported)
        if removed is None:
            self.present.append((pk, path))
        else:
            self.removed[path] = pk

    def archive_state(self, report: ImportReport, *, named: bool = False) -> None:
        """Learn which files (and file backups) the archive is behind on, for `catch_up`.

        `named`: the pass looks at the files an event named, so only theirs are asked
        about, and a tick costs the same whatever the size of the corpus.
        """
        if not archive_enabled() or not self.imported:
            return
        ids = [pk for pk, _ in self.imported.values()] if named else None
        ends = archive_ends(ids)
        report.archive_ends = ends
        report.archive_ends_known = True
        self.behind = {
            path: pk
            for path, (pk, size) in self.imported.items()
            if size and ends.get(pk, 0) != size
        }
        # Sessions imported before their backups were kept, or whose backups came after.
        flagged = Session.objects.filter(file_backups=True, file_removed_at=None)
        if ids is not None:
            flagged = flagged.filter(pk__in=ids)
        backups = ArchivedFile.objects.filter(kind=ArchivedFile.Kind.FILE_HISTORY)
        rows = flagged.exclude(pk__in=backups.values("session_id")).values_list(
            "pk", "path", "agent", "session_id", "project__root"
        )
        for pk, path, agent, session_id, root in rows:
            folder = history_folder(agent, root, str(session_id))
            if folder is not None and path in self.imported:
                self.history_behind[path] = (pk, folder)
        self._folders_behind(ids)

    def _folders_behind(self, ids: list[int] | None) -> None:
        """Sessions imported before the files of their folder were kept (or whose folder
        came after their last line): their folder is looked at once, by `catch_up`."""
        with_folders = [a.name for a in agents() if keeps_session_folders(a)]
        sessions = Session.objects.filter(
            is_subagent=False, file_removed_at=None, agent__in=with_folders
        )
        if ids is not None:
            sessions = sessions.filter(pk__in=ids)
        held = ArchivedFile.objects.filter(kind=ArchivedFile.Kind.SIDECAR)
        rows = sessions.exclude(pk__in=held.values("session_id")).values_list(
            "pk", "path", "agent", "session_id"
        )
        for pk, path, agent, session_id in rows:
            folder = session_folder(agent_for(agent), Path(path), str(session_id))
            if folder is not None and path in self.imported:
                self.folder_behind[path] = (pk, folder)

    def catch_up(self, source: SessionFile, report: ImportReport) -> None:
        """Archive the unchanged file `source` if its archive is behind its index
        (imported before the archive was kept, or while it was off), and its file backups
        and the files of its folder if the archive holds none of them."""
        history = self.history_behind.pop(str(source.path), None)
        folder = self.folder_behind.pop(str(source.path), None)
        pk = self.behind.pop(str(source.path), None)
        if pk is None:
            # Most sessions with checkpoint records have no backups, and most sessions no
            # folder: a look, no query.
            for behind, keep in ((history, history_keep), (folder, folder_keep)):
                if behind is not None and os.path.isdir(behind[1]):
                    with transaction.atomic():
                        session = Session.objects.select_for_update().filter(pk=behind[0]).first()
                        if session is not None:
                            keep(session, report)
            return
        try:
            f = open_regular(source.path, root=source.root)
        except (OSError, UnsafePath) as exc:
            report.errors.append(f"{source.path}: not archived ({exc})")
            return
        with f, transaction.atomic():
            session = Session.objects.select_for_update().filter(pk=pk).first()
            if session is not None:
                archive_keep(session, f, report, fresh=False)

    def removals_mark(
        self, found: list[SessionFile], scanned: list[Path], report: ImportReport
    ) -> None:
        """Mark the sessions whose file is gone from a root looked through whole, unmark
        those whose file is back. The rows stay: the archive holds their bytes."""
        if not scanned:
            return
        present = {str(f.path) for f in found}
        back = [pk for path, pk in self.removed.items() if path in present]
        if back:
            # Only a file the import took is back; one refused (removed_session_guard) is not.
            rows = Session.objects.filter(pk__in=back).values_list("pk", "path", "bytes_imported")
            back = [pk for pk, path, size in rows if _size(path) == size]
        if back:
            Session.objects.filter(pk__in=back).update(file_removed_at=None)
        roots = {str(resolve_root(r)) for r in scanned} | {str(f.root) for f in found}
        prefixes = tuple(root.rstrip(os.sep) + os.sep for root in roots)
        gone = [
            pk
            for pk, path in self.present
            if path not in present and path.startswith(prefixes) and not os.path.lexists(path)
        ]
        if gone:
            Session.objects.filter(pk__in=gone).update(file_removed_at=timezone.now())
            report.removed += len(gone)
