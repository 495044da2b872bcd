"""Transcript records read through the index: a page of turns, one record, a subagent's transcript.

The index says where each record lies; its parsed line is read from the file
itself. A file that cannot be opened still gives its records, without data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import orjson
from django.db.models import F, Max, Min, Q, QuerySet

from ...models import Record, Session
from ...transcript import RawRecord
from ..archive import session_open
from ..roots import UnsafePath
from .lines import max_record, record_line

PAGE_TURNS = 20
# The columns a page needs; the raw bytes stay in the file.
PAGE_COLUMNS = (
    "line",
    "offset",
    "length",
    "kind",
    "raw_type",
    "subtype",
    "turn",
    "active",
    "sidechain",
    "timestamp",
    "text",
    "starts_turn",
)


def transcript_records(
    session: Session, *, first_turn: int, last_turn: int, show_all: bool = False
) -> list[RawRecord]:
    """The records of turns first..last, in file order, each with its parsed line."""
    return with_data(session, _turn_rows(session, first_turn, last_turn, show_all))


def page_records(
    session: Session,
    *,
    first_turn: int,
    last_turn: int,
    from_line: int = 0,
    limit: int,
    show_all: bool = False,
) -> Iterator[RawRecord]:
    """At most `limit` records of turns first..last from `from_line` on, each read when reached.

    A page stops taking records once full: a record it does not reach is never read
    from the file or parsed.
    """
    rows = _turn_rows(session, first_turn, last_turn, show_all).filter(line__gte=from_line)
    # Plain rows, in chunks: rows past where the page stops are not even made into tuples.
    rows = rows.values_list(*PAGE_COLUMNS, named=True)[:limit]
    return iter_with_data(session, rows.iterator(chunk_size=100))


def active_records(session: Session, *, from_line: int, limit: int) -> list[RawRecord]:
    """At most `limit` records of the active branch's turns from `from_line` on, in file
    order, each with its parsed line: an export's window.

    Read from `from_line` on the (session, line) index, so each window costs its own rows
    however long the session is (no span of the whole branch looked up again each time).
    """
    rows = Record.objects.filter(
        session=session, line__gte=from_line, active=True, turn__isnull=False
    ).order_by("line")
    return with_data(session, rows.values_list(*PAGE_COLUMNS, named=True)[:limit])


def _turn_rows(session: Session, first_turn: int, last_turn: int, show_all: bool) -> QuerySet:
    rows = Record.objects.filter(session=session, turn__gte=first_turn, turn__lte=last_turn)
    if first_turn <= 1 and show_all:
        rows = Record.objects.filter(session=session).filter(
            Q(turn__gte=first_turn, turn__lte=last_turn) | Q(turn__isnull=True, active=True)
        )
        return rows.order_by("line")
    if not show_all:
        rows = rows.filter(active=True)
    return _within_span(rows).order_by("line")


def _within_span(rows: QuerySet) -> QuerySet:
    """`rows`, also bounded by the first and last line they hold.

    The bound changes nothing in what is found; it keeps a page's read bounded.
    Asked for a session's first turns in line order, PostgreSQL walks the session's
    (session, line) index from its start and filters on the turn, which reads every
    later row of the session when the page's turns are all near its start (30,000
    rows for 110 in a 100 MB session). The span comes from the (session, turn)
    index; `line + 0` keeps the planner from answering MIN and MAX by that same
    walk of (session, line).
    """
    span = rows.order_by().aggregate(first=Min(F("line") + 0), last=Max(F("line") + 0))
    if span["first"] is None:
        return rows.none()
    return rows.filter(line__gte=span["first"], line__lte=span["last"])


def record_at(session: Session, line: int) -> RawRecord | None:
    """One record with its parsed line, for "show all" of a long output."""
    rows = session.records.filter(line=line)
    found = with_data(session, rows)
    return found[0] if found else None


def subagent_records(sub: Session) -> list[RawRecord]:
    """A subagent transcript's records, shown as one conversation of its own."""
    records = with_data(sub, sub.records.order_by("line"))
    for record in records:
        # Every record of a subagent file is a sidechain; here it is the main line.
        record.sidechain, record.active, record.turn = False, True, 1
        record.starts_turn = None  # its prompt is read by kind: the index numbers no turn here
    return records


def with_data(session: Session, rows: Iterable[Any]) -> list[RawRecord]:
    """The rows as transcript records, each with its line read from the session file."""
    return list(iter_with_data(session, rows))


def iter_with_data(session: Session, rows: Iterable[Any]) -> Iterator[RawRecord]:
    """The rows as transcript records, each line read from the file only when it is reached."""
    try:
        f = session_open(session)
    except (OSError, UnsafePath):
        yield from (_raw(row, None) for row in rows)
        return
    with f:
        for row in rows:
            yield _raw(row, _load(f, row.offset, row.length))


def _load(f: BinaryIO, offset: int, length: int) -> Any:
    try:
        raw = record_line(f, offset, length)
        return None if raw is None else orjson.loads(raw)
    except (orjson.JSONDecodeError, OSError):  # OSError: an archived piece found corrupted
        return None


def _raw(row: Any, data: Any) -> RawRecord:
    # `row`: a Record, or a named row of its PAGE_COLUMNS.
    return RawRecord(
        line=row.line,
        kind=row.kind,
        raw_type=row.raw_type,
        subtype=row.subtype,
        turn=row.turn,
        active=row.active,
        sidechain=row.sidechain,
        timestamp=row.timestamp,
        data=data,
        length=row.length,
        text=row.text,
        starts_turn=row.starts_turn,
        cut_at=limit if (limit := max_record()) < row.length else None,
    )
