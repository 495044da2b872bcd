"""Search texts stored and linked to their records, from the import's read or the search pass's.

A record whose uuid already has a text in its namespace (the same record copied into a
fork) is linked to it; any other gets a text of its own, stored once per uuid and
namespace (on a hub, another machine's record with the same uuid may say anything), and
once per title in a session (the CLIs write a session's title again and again). SQLite:
the words of the texts stored go into FTS5 afterwards, behind the import (`words`);
PostgreSQL: their pieces are cut behind it too (`pieces_filling`).
"""

from __future__ import annotations

from django.db import connection

from ...formats import TITLE
from ...models import Record, SearchChunk, SearchText, Session
from ...models.search import CHUNK_OVERLAP, CHUNK_STEP, SearchChunkWaiting
from .words import behind

# Texts stored per INSERT statement: 5 parameters each, under SQLite's limit of 32,766.
INSERT_ROWS = 2_000
# PostgreSQL: the pieces (SearchChunk) of the texts of `new` (id, folded), cut from the
# folded copy the database made: Python's `lower` is not PostgreSQL's for every character.
PIECES_CUT = (
    f"INSERT INTO {SearchChunk._meta.db_table} (text_id, n, folded) "  # noqa: S608
    f"SELECT new.id, g.n, substr(new.folded, g.n * {CHUNK_STEP} + 1, "
    f"{CHUNK_STEP + CHUNK_OVERLAP}) FROM new, "
    f"generate_series(0, (length(new.folded) - 1) / {CHUNK_STEP}) AS g(n)"
)


class TextLinks:
    """The texts of one session's records being stored: `known` (by uuid) first, then `add`;
    `store` writes the new texts and returns every (text id, line) to link."""

    def __init__(self, session: Session, uuids: list[str]) -> None:
        self.session = session
        self.known = _texts_by_uuid(session.namespace, uuids)
        self.links: list[tuple[int, int]] = []  # (text id, line)
        self.new: list[tuple[str, str, str]] = []  # (uuid, part, text)
        self.new_lines: list[list[int]] = []  # the lines holding each new text
        self.pending: dict[str, int] = {}  # uuid (or a title) -> index into `new`
        self.linked = 0  # records linked to a text another record already had

    def known_link(self, line: int, uuid: str) -> bool:
        """Link the record to a text its uuid already has; False when it has none yet."""
        if uuid in self.known:
            self.links.append((self.known[uuid], line))
            self.linked += 1
            return True
        if uuid and uuid in self.pending:
            self.new_lines[self.pending[uuid]].append(line)
            return True
        return False

    def add(self, line: int, uuid: str, kind: str, found: tuple[str, str]) -> None:
        """The record's (part, text), read from its line (after `known_link` said no)."""
        key = uuid
        if not uuid and kind == TITLE:
            key = "title\x00" + found[1]
            if key not in self.pending and (held := _title_held(self.session, found[1])):
                self.links.append((held, line))
                return
        if key and key in self.pending:
            self.new_lines[self.pending[key]].append(line)
            return
        if key:
            self.pending[key] = len(self.new)
        self.new.append((uuid, *found))
        self.new_lines.append([line])

    def store(self) -> list[tuple[int, int]]:
        """Store the new texts; every (text id, line) of the records given."""
        ids = _new_ids(len(self.new))
        if self.new:
            namespace = self.session.namespace
            rows = [(i, namespace, *values) for i, values in zip(ids, self.new, strict=True)]
            _texts_insert(rows)
            if connection.vendor == "postgresql":
                # Another import (a machine's push racing its watcher's) may have stored a
                # uuid's text first: its text is the one linked.
                held = _texts_by_uuid(namespace, [values[0] for values in self.new])
                ids = [held.get(values[0], i) for i, values in zip(ids, self.new, strict=True)]
        for i, lines in zip(ids, self.new_lines, strict=True):
            self.links.extend((i, line) for line in lines)
        return self.links

    @property
    def text_bytes(self) -> int:
        return sum(len(values[2]) for values in self.new)


def _texts_insert(rows: list[tuple[int, str, str, str, str]]) -> None:
    """Store the texts, many rows per statement.

    One statement for many rows, not one per row: fewer round trips, and one
    statement journal instead of one per text. PostgreSQL: each text's pieces with it, or,
    filled behind, the text queued for the thread that cuts them (`pieces_filling`).
    """
    table = SearchText._meta.db_table
    insert = f"INSERT INTO {table} (id, namespace, uuid, part, text) VALUES {{marks}}"  # noqa: S608
    if connection.vendor == "postgresql":
        # A uuid's text stored meanwhile by another transaction is left as it is (`store`
        # links to it).
        insert += " ON CONFLICT (namespace, uuid) WHERE NOT (uuid = '') DO NOTHING"
        if behind():
            insert = (
                f"WITH new AS ({insert} RETURNING id) "  # noqa: S608
                f"INSERT INTO {SearchChunkWaiting._meta.db_table} (text_id) SELECT id FROM new"
            )
        else:
            insert = f"WITH new AS ({insert} RETURNING id, folded) {PIECES_CUT}"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), INSERT_ROWS):
            chunk = rows[start : start + INSERT_ROWS]
            marks = ", ".join(["(%s, %s, %s, %s, %s)"] * len(chunk))
            cursor.execute(insert.format(marks=marks), [value for row in chunk for value in row])


def _title_held(session: Session, title: str) -> int | None:
    """The text of this title if a record of the session already holds it."""
    held = Record.objects.filter(
        session=session, kind=TITLE, search_text__uuid="", search_text__text=title
    )
    return held.values_list("search_text", flat=True).first()


def _texts_by_uuid(namespace: str, uuids: list[str]) -> dict[str, int]:
    """The texts of these uuids in `namespace`, by uuid."""
    found: dict[str, int] = {}
    unique = sorted({u for u in uuids if u})
    table = SearchText._meta.db_table
    # Raw: every slice asks, most find nothing, and the ORM's query costs more than that.
    with connection.cursor() as cursor:
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            # The partial unique index's condition, word for word, or SQLite scans them all.
            cursor.execute(
                f"SELECT uuid, id FROM {table} "  # noqa: S608
                f"WHERE namespace = %s AND uuid IN ({marks}) AND NOT (uuid = '')",
                [namespace, *chunk],
            )
            found.update(cursor.fetchall())
    return found


def _new_ids(n: int) -> list[int]:
    """`n` fresh ids for search texts, taken in this transaction."""
    if not n:
        return []
    table = SearchText._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                [table, n],
            )
            return [row[0] for row in cursor.fetchall()]
        # SQLite: this transaction holds the write lock from its start (IMMEDIATE), so
        # ids are committed in order; above the largest id the table ever held (its
        # AUTOINCREMENT's), so words a deleted text left in the index name no other text.
        cursor.execute(
            f"SELECT MAX(COALESCE((SELECT MAX(id) FROM {table}), 0), "  # noqa: S608
            "COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0))",
            [table],
        )
        top = cursor.fetchone()[0]
        return list(range(top + 1, top + 1 + n))
