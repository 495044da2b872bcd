"""The source rows a fork keeps: what the copy wrote for each, and their graph in the new file."""

from __future__ import annotations

from array import array
from datetime import UTC, datetime

from django.db import connection
from django.utils.dateparse import parse_datetime

from ...conversation import Node
from ...formats import ASSISTANT
from ...formats.shape import Row
from ...models import Record, Session


class Unproven(Exception):
    """The cheap read-back cannot vouch for the file; a full import must decide."""


class Written:
    """What the copy wrote, line by line: source line, length and CRC-32 of the bytes written."""

    def __init__(self) -> None:
        self.src = array("q")
        self.length = array("q")
        self.digest = array("q")

    def add(self, row: Row, length: int, digest: int) -> None:
        self.src.append(row.line)
        self.length.append(length)
        self.digest.append(digest)


ROW_COLUMNS = (
    "line, uuid, parent_uuid, logical_parent_uuid, raw_type, kind, turn, active, sidechain, "
    '"timestamp", text, starts_turn'
)


def kept_rows(session: Session, written: Written) -> tuple[list[Node], list[tuple], int]:
    """The graph nodes (new line numbers) and facts of the kept source rows, and kept assistants."""
    table = Record._meta.db_table
    nodes: list[Node] = []
    facts: list[tuple] = []
    assistants = 0
    src = written.src
    if not src:
        return nodes, facts, 0
    k = 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {ROW_COLUMNS} FROM {table} "  # noqa: S608 (names are ours)
            "WHERE session_id = %s AND line >= %s AND line <= %s "
            # A fork keeps active records and bookkeeping only (a row missed here
            # leaves the fork unproven, never wrong).
            "AND (active OR uuid = '') ORDER BY line",
            [session.pk, src[0], src[-1]],
        )
        while batch := cursor.fetchmany(5_000):
            for (
                line,
                uuid,
                parent,
                logical,
                raw_type,
                kind,
                turn,
                active,
                side,
                ts,
                text,
                start,
            ) in batch:
                if k >= len(src) or line != src[k]:
                    continue
                if ts is not None and (ts.__class__ is not datetime or ts.tzinfo is None):
                    ts = _aware(ts)
                nodes.append(
                    Node(
                        k,
                        uuid or None,
                        parent or None,
                        kind,
                        ts,
                        bool(side),
                        logical or None,
                        text or None,
                    )
                )
                facts.append((raw_type, turn, bool(active), bool(start)))
                assistants += kind == ASSISTANT
                k += 1
    if k != len(src):
        raise Unproven("the source rows changed during the fork")
    return nodes, facts, assistants


def _aware(value: datetime | str) -> datetime | None:
    """A stored time as an aware datetime (SQLite hands back naive UTC, or its text)."""
    parsed = parse_datetime(value) if isinstance(value, str) else value
    if parsed is None or parsed.tzinfo is not None:
        return parsed
    return parsed.replace(tzinfo=UTC)
