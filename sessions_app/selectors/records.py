"""Transcript records read through the index: a page of turns, one record, a subagent's transcript.

The index says where each record lies; its parsed line is read from the file
itself. A file that cannot be opened still gives its records, without data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, BinaryIO

import orjson
from django.db.models import Q

from ..models import Record, Session
from ..services.roots import UnsafePath, open_regular
from ..transcript import RawRecord

PAGE_TURNS = 20


def transcript_records(
    session: Session, *, first_turn: int, last_turn: int, show_all: bool = False
) -> list[RawRecord]:
    """The records of turns first..last, in file order, each with its parsed line."""
    rows = Record.objects.filter(session=session, turn__gte=first_turn, turn__lte=last_turn)
    if first_turn <= 1 and show_all:
        rows = Record.objects.filter(session=session).filter(
            Q(turn__gte=first_turn, turn__lte=last_turn) | Q(turn__isnull=True, active=True)
        )
    if not show_all:
        rows = rows.filter(active=True)
    return with_data(session, rows.order_by("line"))


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
    return records


def with_data(session: Session, rows: Iterable[Record]) -> list[RawRecord]:
    """The rows as transcript records, each with its line read from the session file."""
    try:
        f = open_regular(session.path, root=session.project.root)
    except (OSError, UnsafePath):
        return [_raw(row, None) for row in rows]
    with f:
        return [_raw(row, _load(f, row.offset, row.length)) for row in rows]


def _load(f: BinaryIO, offset: int, length: int) -> Any:
    f.seek(offset)
    try:
        return orjson.loads(f.read(length))
    except orjson.JSONDecodeError:
        return None


def _raw(row: Record, data: Any) -> RawRecord:
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
    )
