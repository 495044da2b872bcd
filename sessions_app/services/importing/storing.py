"""Record rows: inserted in batches, re-placed where the graph moved, read back as graph nodes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from django.db import connection
from django.db.backends.utils import CursorWrapper

from ...conversation import Analysis, Node
from ...models import Record, Session

BATCH = 2000

RECORD_COLUMNS = (
    "session_id",
    "line",
    '"offset"',
    "length",
    "uuid",
    "parent_uuid",
    "logical_parent_uuid",
    "raw_type",
    "subtype",
    "kind",
    "turn",
    "active",
    "sidechain",
    "timestamp",
    "text",
    "error",
    "input_tokens",
    "output_tokens",
    "digest",
    "starts_turn",
)


def records_insert(cursor: CursorWrapper, rows: list[tuple]) -> None:
    """Insert record rows (values in RECORD_COLUMNS order) in one round trip."""
    if not rows:
        return
    # Plain executemany: the ORM's bulk_create costs more than the parsing.
    table = Record._meta.db_table
    sql = (
        f"INSERT INTO {table} ({', '.join(RECORD_COLUMNS)}) "  # noqa: S608 (names are ours)
        f"VALUES ({', '.join(['%s'] * len(RECORD_COLUMNS))})"
    )
    cursor.executemany(sql, rows)


def existing_nodes(session: Session) -> list[Node]:
    """The graph nodes of the records already stored, which an append extends."""
    return session.records.graph_nodes()


def _datetime_adapter() -> Callable[[datetime], object]:
    """How this database wants an aware UTC datetime in a raw query."""
    if connection.vendor == "sqlite":
        # What Django's adapter produces for an aware UTC value, without its checks:
        # this runs once per record.
        return lambda value: str(value.astimezone(UTC).replace(tzinfo=None))
    return connection.ops.adapt_datetimefield_value


def store_records(
    session: Session, nodes: list[Node], n_old: int, new_rows: list[tuple], analysis: Analysis
) -> None:
    """Re-place the first `n_old` stored records whose turn moved; insert the new rows."""
    table = Record._meta.db_table
    adapt = _datetime_adapter()
    starts = set(analysis.prompt_lines)
    with connection.cursor() as cursor:
        if n_old:
            # Only rows whose place in the graph moved need writing, but finding
            # them costs a read; an append changes few, so compare in Python.
            old = {
                line: (turn, active, start)
                for line, turn, active, start in session.records.values_list(
                    "line", "turn", "active", "starts_turn"
                )
            }
            updates = []
            for i in range(n_old):
                now = (analysis.turn[i], analysis.active[i], i in starts)
                if old.get(nodes[i].line) != now:
                    updates.append((*now, session.pk, nodes[i].line))
            if updates:
                cursor.executemany(
                    f"UPDATE {table} SET turn = %s, active = %s, starts_turn = %s "  # noqa: S608 (table from _meta)
                    "WHERE session_id = %s AND line = %s",
                    updates,
                )
        batch: list[tuple] = []
        for k, row in enumerate(new_rows):
            line, offset, length, raw_type, subtype, error, t_in, t_out, crc = row
            i = n_old + k
            node = nodes[i]
            batch.append(
                (
                    session.pk,
                    line,
                    offset,
                    length,
                    node.uuid or "",
                    node.parent_uuid or "",
                    node.logical_parent_uuid or "",
                    raw_type[:64],
                    subtype[:64],
                    node.kind,
                    analysis.turn[i],
                    analysis.active[i],
                    node.sidechain,
                    adapt(node.timestamp) if node.timestamp else None,
                    node.text or "",
                    (error or "")[:255],
                    min(t_in, 2**31 - 1),
                    min(t_out, 2**31 - 1),
                    crc,
                    i in starts,
                )
            )
            if len(batch) >= BATCH:
                records_insert(cursor, batch)
                batch.clear()
        records_insert(cursor, batch)
