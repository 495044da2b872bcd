"""Indexing a file the dashboard wrote, from its temporary file, and checking it reads back.

A new or rewritten file is indexed from scratch before it is linked or renamed
into place (same inode, so the index's state is the final file's), and the index
is then asked whether the file holds exactly what was intended: every line JSON,
every record in the intended session, the chain whole, the turns' prompts the
intended ones. If not, the caller's transaction rolls back and nothing replaces
anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.db.models import Max, Min
from django.utils import timezone

from ...models import Session
from ..discovery import SessionFile
from ..errors import BranchError, WriteCheckFailed
from ..files import NewFile
from ..importing import ImportReport, projects_refresh, session_file_index
from ..searching import search_refresh, words_kick
from ..usage import usage_refresh
from .guards import own_write


@dataclass(frozen=True)
class Expected:
    """What a written file must read back as."""

    turns: int
    prompts: list[str] | None  # None: proven otherwise (undo compares every byte)
    invalid: int = 0
    check_ids: bool = True  # every record carries the file's session id
    whole_chain: bool = True  # every conversation record lies on the active branch
    lines: int | None = None
    origin: str = ""  # the file it was made from: named when it is refused
    foreign: int = 0  # records naming another session that the file keeps as they were


def session_file_of(session: Session, path: Path, session_id: str) -> SessionFile:
    """The file at `path` as a session file of `session`'s project."""
    project = session.project
    return SessionFile(path, session.agent, Path(project.root), Path(project.folder), session_id)


def index_written(*, source: SessionFile, temp: Path, expected: Expected) -> Session:
    """Index `temp` as the file `source` names, and check it holds what was intended."""
    report = ImportReport()
    indexed = session_file_index(source=source, report=report, read_from=temp)
    if indexed is None:
        raise BranchError("; ".join(report.errors) or f"could not index {source.path}")
    new = indexed.session
    problems = []
    if new.invalid_count != expected.invalid:
        problems.append(f"{new.invalid_count} line(s) are not JSON records")
    if expected.check_ids and indexed.foreign_ids != expected.foreign:
        problems.append(f"{indexed.foreign_ids} record(s) belong to another session")
    if expected.lines is not None and new.record_count != expected.lines:
        problems.append(f"{new.record_count} lines instead of {expected.lines}")
    if new.turn_count != expected.turns:
        problems.append(f"{new.turn_count} turn(s) instead of {expected.turns}")
    prompts = list(
        new.records.filter(starts_turn=True).order_by("line").values_list("text", flat=True)
    )
    if (
        expected.prompts is not None
        and new.turn_count == expected.turns
        and prompts != expected.prompts
    ):
        pairs = enumerate(zip(prompts, expected.prompts, strict=False))
        differ = next((n for n, (a, b) in pairs if a != b), len(prompts))
        problems.append(f"the prompt of turn {differ + 1} is not the intended one")
    if expected.whole_chain:
        off_branch = new.records.filter(sidechain=False, active=False).exclude(uuid="").count()
        if off_branch or new.abandoned:
            problems.append(f"the chain of records is broken ({off_branch} off the branch)")
    if problems:
        # The written file is removed once refused: name the one it was made from.
        made_from = f"the copy of {expected.origin}" if expected.origin else str(source.path)
        raise WriteCheckFailed(
            f"{made_from}: the written file did not read back as intended "
            f"({'; '.join(problems)}); nothing was written"
        )
    _searchable_once_committed()
    return new


def times_from_rows(new: Session) -> None:
    """The session's first and last times, from its rows (a plain fork's read-back keeps none)."""
    times = new.records.aggregate(first=Min("timestamp"), last=Max("timestamp"))
    if times["first"] is not None:
        new.started_at, new.updated_at = times["first"], times["last"]
        new.save(update_fields=["started_at", "updated_at"])


def reindex(session: Session, *, full: bool = False) -> Session:
    """Bring the index of a session file up to date; `full` reads it all again."""
    report = ImportReport()
    indexed = session_file_index(
        source=session_file_of(session, Path(session.path), str(session.session_id)),
        report=report,
        full=full,
    )
    if indexed is None:
        raise BranchError("; ".join(report.errors) or f"could not re-import {session.path}")
    projects_refresh(project_ids=[session.project_id])
    _searchable_once_committed()
    return indexed.session


def _searchable_once_committed() -> None:
    """Kick the search filler when the caller's transaction commits, as the importer does."""
    # Without it the texts this write stored wait for the importer's next kick (up to its
    # rescan, 10 minutes) while the search page says they are not searchable yet.
    transaction.on_commit(words_kick)


def fork_put_in_place(
    session: Session,
    new: Session,
    temp: NewFile,
    target: Path,
    *,
    kind: str,
    fork_turn: int | None,
) -> None:
    """Link a registered fork's checked file where the CLI looks, and say where it came from.

    Made now, by the dashboard, whatever the records it copied say (a CLI branch's did).
    """
    new.parent, new.kind, new.fork_turn = session, kind, fork_turn
    temp.link()
    new.own_write = own_write(os.lstat(target))
    new.made_at = timezone.now()
    new.save(update_fields=["parent", "kind", "fork_turn", "own_write", "made_at"])
    projects_refresh(project_ids={session.project_id, new.project_id})


def caught_up(*sessions: Session | None) -> None:
    """The watcher's catch-up for the sessions an action wrote, before the action returns.

    The import of a written file stores what its one read gives; the search texts and
    the usage its agent's reader needs the lines before for (Codex) wait for the search
    and usage passes, up to the watcher's next rescan: meanwhile the new session is not
    searchable and its source's messages are charged to it. The same passes, run here for
    these sessions only (a message counts in the session made first: the source).
    """
    ids = sorted({s.pk for s in sessions if s is not None and s.pk is not None})
    if ids:
        search_refresh(session_ids=ids)
        usage_refresh(session_ids=ids)
