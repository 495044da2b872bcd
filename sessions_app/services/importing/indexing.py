"""One open file brought up to date: plan, read, number the graph (an append from its leaf).

The file is read in pieces (`FileReader.chunks`) and each is stored before the next
is read: the first as a file of its own, each next one as an append to it, numbered
from the active leaf (`conversation.extend`), as an import of a grown file would.
Where a piece does not only continue the active branch (a rewind inside the CLI, a
parent elsewhere), the rest of the file is read in one piece and the whole graph is
analysed with the rows stored so far. So an import holds one piece at a time, not a
node per line, and gives what one whole-graph analysis gives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO

from django.db import connection

from ...conversation import analyse, dangling_parents, extend
from ...formats import agent_for
from ...models import Session
from ..archive.making import pieces_ahead
from ..discovery import SessionFile
from ..searching import texts_collect
from ..usage import usage_forget
from .archiving import archive_keep, removed_session_guard
from .plan import HEAD_BYTES, FileState, Plan, import_plan
from .reading import FileReader
from .report import ImportReport
from .rows import Rows
from .session_row import (
    appended_update_possible,
    new_session,
    reset,
    stored_state,
    update_session,
    update_session_appended,
)
from .storing import (
    active_tip,
    dangling_after_append,
    existing_nodes,
    kept_dangling,
    records_append,
    store_records,
)

# Off only to measure the whole-graph analysis an append otherwise avoids (bench/).
INCREMENTAL = True
# Lines per piece a file is read and stored in; None: the whole file at once (tests
# compare the two). A piece of this many lines weighs a few MB while it is held.
CHUNK_LINES: int | None = 2000


@dataclass
class Indexed:
    """A file just indexed, with what a check of a file the dashboard wrote needs."""

    session: Session
    foreign_ids: int  # records whose sessionId is not the file's session id
    plan: Plan


def import_open_file(
    source: SessionFile, f: BinaryIO, report: ImportReport, *, fresh: bool
) -> Indexed:
    """Index the open file `f` of `source`; the caller holds the transaction."""
    stat = os.fstat(f.fileno())
    session = _locked_session(str(source.path))

    def read(offset: int, length: int) -> bytes:
        f.seek(offset)
        return f.read(length)

    state = FileState(stat.st_size, stat.st_mtime_ns, stat.st_ino)
    # A file read from elsewhere (a temporary file about to replace it) is new.
    stored = stored_state(session) if session and not fresh else None
    plan = import_plan(state, stored, read)
    if session is not None and not fresh:  # fresh: the dashboard's own write (a restore)
        removed_session_guard(session, f, rewritten=plan is Plan.FULL)
    if plan is Plan.SKIP:
        assert session is not None  # only a stored file can be unchanged
        report.skipped += 1
        archive_keep(session, f, report, fresh=False)  # one imported before the archive was
        return Indexed(session, 0, plan)
    start = 0
    retold = 0
    known = session is not None
    if session is None:
        session = new_session(source, report.project_ids)
    elif plan is Plan.APPEND:
        start = session.bytes_imported
        # The unterminated tail of the last import is read again, now complete.
        retold, _ = session.records.filter(line__gte=session.line_count).delete()
    else:
        # Read again from the start: the new rows are linked to their texts again
        # by the search pass; texts no row holds any more go now.
        searched = list(
            session.records.filter(search_text__isnull=False).values_list("search_text", flat=True)
        )
        session.records.all().delete()
        texts_collect(searched)
        usage_forget(session)
        reset(session)
    head = read(0, HEAD_BYTES)
    # Read from its start: its archive pieces are made in a thread meanwhile.
    ahead = pieces_ahead(f, stat.st_size) if not start else None
    f.seek(start)

    reader = FileReader(source, session, report)
    # A CLI whose lines the agent chains by their order (Codex) is read in one piece:
    # its chain is linked as it is read, which pieces have not been checked against.
    reader.chunk_lines = CHUNK_LINES if agent_for(source.agent).line_chain is None else None
    pieces = reader.chunks(f, start, first_line=session.line_count if start else 0)
    has_rows = bool(start)  # the session has rows from before this piece
    rival: datetime | None = None  # known once a piece of this read is numbered
    if source.is_subagent:
        report.subagents += 1
    else:
        report.sessions += 1
    for new_rows in pieces:
        rival = _store_piece(
            source, session, reader, new_rows, pieces, stat, head, has_rows, retold, rival
        )
        report.records += len(new_rows)
        has_rows, retold = True, 0
    report.invalid += reader.invalid
    # A file read from the start is stored again (a new one has no pieces to drop).
    again = known and plan is not Plan.APPEND
    archive_keep(session, f, report, fresh=again, new=not known, ahead=ahead)
    return Indexed(session, reader.foreign_ids, plan)


def _store_piece(
    source: SessionFile,
    session: Session,
    reader: FileReader,
    new_rows: Rows,
    pieces: Iterator[Rows],
    stat: os.stat_result,
    head: bytes,
    stored: bool,
    retold: int,
    rival: datetime | None,
) -> datetime | None:
    """Number and store one piece read (`reader.nodes`); the rest of the file too if need be.

    `rival`: the newest leaf's time besides the active one (`conversation.Tip.rival`)
    if known; returns it after this piece.
    """
    # The common append continues the active branch: numbered from its leaf, no
    # stored row moves. Not after a re-read tail: the session row counted it already;
    # nor for lines a CLI branch copied (where it split is counted over the whole file).
    extension = tip = None
    if (
        stored
        and not retold
        and INCREMENTAL
        and reader.last_copied_line < new_rows.first_line
        and appended_update_possible(session)
    ):
        tip = active_tip(session, reader.nodes)
        if tip is not None:
            tip.rival = rival
            extension = extend(tip, reader.nodes, source.agent)
    if extension is not None:
        assert tip is not None
        session.dangling_parents = dangling_after_append(session, tip, reader.nodes)
        update_session_appended(session, source, reader, extension, stat, head)
        reader.tokens_written()
        records_append(session, reader.nodes, new_rows, extension)
        return extension.rival

    new_nodes = reader.nodes
    if stored or reader.forked_from:
        # The whole graph is analysed: with the rest of the file, so only once.
        reader.chunk_lines = None
        for more in pieces:
            new_rows.extend(more)
            new_nodes += reader.nodes
        reader.nodes = new_nodes
    existing = existing_nodes(session) if stored else []
    nodes = existing + new_nodes
    analysis = analyse(nodes, source.agent)
    session.dangling_parents = kept_dangling(dangling_parents(nodes))
    # The session row is written with everything the file said so far, before its records.
    update_session(session, source, reader, analysis, nodes, stat, head)
    reader.tokens_written()
    store_records(session, nodes, len(existing), new_rows, analysis)
    return analysis.rival


def _locked_session(path: str) -> Session | None:
    """The file's session row, locked until the transaction ends; None for a file new to the
    index. One small query first: compiling the ORM's select of every column costs a
    millisecond, more than many a file's import, and most files an import opens are new."""
    table = Session._meta.db_table
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {table} WHERE path = %s{lock}", [path])  # noqa: S608
        row = cursor.fetchone()
    return None if row is None else Session.objects.get(pk=row[0])
