"""Record rows: inserted in batches, re-placed where the graph moved, read back as graph nodes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.db.models import Exists, OuterRef, Q

from ...conversation import Analysis, Extension, Node, Tip, dangling_parents, graph_uuids
from ...formats import CONVERSATION_KINDS
from ...models import Record, Session
from .extras import texts_stored, usage_stored
from .rows import Rows

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
# The import's rows: each with its search text, where it has one (`Rows.texts`).
IMPORT_COLUMNS = (*RECORD_COLUMNS, "search_text_id")


def records_insert(
    cursor: CursorWrapper, rows: list[tuple], columns: tuple[str, ...] = RECORD_COLUMNS
) -> None:
    """Insert record rows (values in `columns` order) in one round trip."""
    if not rows:
        return
    table = Record._meta.db_table
    if connection.vendor == "postgresql":
        # COPY: one stream, no statement per row (executemany sends one per row).
        raw = cursor.cursor
        with raw.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    # Plain executemany: the ORM's bulk_create costs more than the parsing.
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) "  # noqa: S608 (names are ours)
        f"VALUES ({', '.join(['%s'] * len(columns))})"
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
    session: Session, nodes: list[Node], n_old: int, new_rows: Rows, analysis: Analysis
) -> None:
    """Re-place the first `n_old` stored records whose turn moved; insert the new rows."""
    table = Record._meta.db_table
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
        starts_new = [n_old + k in starts for k in range(len(new_rows))]
        _insert_new(
            cursor,
            session,
            nodes[n_old:],
            new_rows,
            analysis.turn[n_old:],
            analysis.active[n_old:],
            starts_new,
        )


def records_append(session: Session, nodes: list[Node], rows: Rows, extension: Extension) -> None:
    """Insert the rows of an append that only continued the active branch; no stored row moves."""
    with connection.cursor() as cursor:
        _insert_new(
            cursor, session, nodes, rows, extension.turn, extension.active, extension.starts_turn
        )


def _insert_new(
    cursor: CursorWrapper,
    session: Session,
    nodes: list[Node],
    new_rows: Rows,
    turns: list[int | None],
    actives: list[bool],
    starts: list[bool],
) -> None:
    """Insert the rows read (with their nodes), placed by the given turns and flags, each
    linked to its search text."""
    adapt = _datetime_adapter()
    text_of = texts_stored(session, nodes, new_rows)
    batch: list[tuple] = []
    for k in range(len(new_rows)):
        line, offset, length, raw_type, subtype, error, t_in, t_out, crc = new_rows.row(k)
        node = nodes[k]
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
                turns[k],
                actives[k],
                node.sidechain,
                adapt(node.timestamp) if node.timestamp else None,
                node.text or "",
                (error or "")[:255],
                min(t_in, 2**31 - 1),
                min(t_out, 2**31 - 1),
                crc,
                starts[k],
                text_of.get(k),
            )
        )
        if len(batch) >= BATCH:
            records_insert(cursor, batch, IMPORT_COLUMNS)
            batch.clear()
    records_insert(cursor, batch, IMPORT_COLUMNS)
    if new_rows.usage:
        usage_stored(session, nodes, new_rows, adapt)


# How far up from the active leaf an append looks for its nearest conversation
# record (usually the leaf itself); beyond that the whole graph is analysed.
TIP_DEPTH = 8


def active_tip(session: Session, new: list[Node]) -> Tip | None:
    """The stored active leaf an append can continue from, in a few indexed reads; else None.

    None when the stored graph would change: a new record's uuid is already stored,
    or a stored record names a new one as its (logical) parent.
    """
    if not session.leaf_uuid:
        return None
    uuids = graph_uuids(new)
    found = _rows_with_uuids(session, [session.leaf_uuid, *uuids])
    if any(row[1] != session.leaf_uuid for row in found) or not found:
        return None
    dangling = stored_dangling(session)
    if dangling is None:
        if names_as_parent(session, uuids):
            return None
    elif not dangling.isdisjoint(uuids):
        return None
    chain = [_node(found[0])]
    seen = {session.leaf_uuid}
    while chain[-1].kind not in CONVERSATION_KINDS:
        up = chain[-1].parent_uuid
        if not up:
            if chain[-1].logical_parent_uuid:
                return None  # a compaction boundary: its parent is found another way
            break  # the root
        if up in seen or len(chain) > TIP_DEPTH:
            return None
        seen.add(up)
        rows = _rows_with_uuids(session, [up])
        if not rows:
            break  # a parent missing from the file: the chain starts here
        chain.append(_node(rows[0]))
    last_active = (
        session.records.filter(active=True).order_by("-line").values_list("turn", flat=True).first()
    )
    return Tip(chain, session.turn_count, last_active)


# More dangling parents than this are not kept: such a session's appends read its rows.
DANGLING_LIMIT = 1000


def kept_dangling(found: set[str]) -> list[str] | None:
    """What `Session.dangling_parents` keeps of the set found: sorted, or None if too many."""
    return sorted(found) if len(found) <= DANGLING_LIMIT else None


def stored_dangling(session: Session) -> set[str] | None:
    """The session's dangling parents as kept; if not kept, found in its rows and kept.

    None: too many to keep (`names_as_parent` reads the rows instead).
    """
    if session.dangling_parents is not None:
        return set(session.dangling_parents)
    stored = session.records.filter(sidechain=False)
    found: set[str] = set()
    for name in ("parent_uuid", "logical_parent_uuid"):
        owned = stored.filter(uuid=OuterRef(name))
        named = stored.exclude(**{name: ""}).filter(~Exists(owned))
        found.update(named.values_list(name, flat=True).distinct()[: DANGLING_LIMIT + 1])
    session.dangling_parents = kept_dangling(found)
    return found if session.dangling_parents is not None else None


def dangling_after_append(session: Session, tip: Tip, new: list[Node]) -> list[str] | None:
    """`Session.dangling_parents` after an append that continued the active branch.

    The new records' own uuids were dangling for none (`active_tip` checked); the
    parents they name are the leaf's chain, each other, or looked up by uuid.
    """
    if session.dangling_parents is None:
        return None
    named = dangling_parents(new) - {n.uuid for n in tip.chain if n.uuid}
    if named:
        named -= {row[1] for row in _rows_with_uuids(session, sorted(named))}
    return kept_dangling(set(session.dangling_parents) | named)


def names_as_parent(session: Session, uuids: list[str]) -> bool:
    """Whether a stored record names one of `uuids` as its parent (written before it).

    No index holds parent uuids, so this reads every stored row of the session (in
    SQL); only for a session whose dangling parents are too many to keep.
    """
    if not uuids:
        return False
    named = Q(parent_uuid__in=uuids) | Q(logical_parent_uuid__in=uuids)
    return session.records.filter(named, sidechain=False).exists()


def _rows_with_uuids(session: Session, uuids: list[str]) -> list[tuple]:
    """The graph fields of the stored records (outside sidechains) with these uuids, by line."""
    fields = ("line", "uuid", "parent_uuid", "kind", "timestamp", "logical_parent_uuid", "text")
    found = session.records.filter(sidechain=False, uuid__in=uuids).values_list(*fields)
    # Sorted here: ordering in SQL lets the planner walk the (session, line) index
    # through every row of the session instead of looking the uuids up.
    return sorted(found)


def _node(row: tuple) -> Node:
    line, uuid, parent, kind, ts, logical, text = row
    return Node(line, uuid or None, parent or None, kind, ts, False, logical or None, text or None)
