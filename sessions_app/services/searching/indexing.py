"""One session's lines brought into the search index, a slice per transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import DatabaseError, connection, transaction
from zlib_ng.zlib_ng import crc32

from ...formats import TITLE, agent_for
from ...formats.agent import Agent
from ...formats.search_text import SEARCHABLE_KINDS, searchable
from ...models import Record, SearchChunk, SearchText, Session
from ...models_search import CHUNK_OVERLAP, CHUNK_STEP
from ..archive import session_open
from ..roots import UnsafePath

if TYPE_CHECKING:
    from . import SearchReport

# A slice: at most this many lines, or this many bytes of lines read from the file.
SLICE_LINES = 5_000
SLICE_BYTES = 16 << 20
# Texts stored per INSERT statement: 4 parameters each, under SQLite's limit of 32,766.
INSERT_ROWS = 2_000


def session_index(session: Session, report: SearchReport, *, words: bool = True) -> None:
    """Index the session's lines the search index does not hold yet; never raises.

    `words=False`: a batch (search_refresh) fills the words' index once at its end.
    """
    agent = agent_for(session.agent)
    counted = False
    while True:
        try:
            with transaction.atomic():
                top = words_top() if words else None
                done, lines = _slice(session, agent, report)
                words_fill(top)
        except (OSError, UnsafePath) as exc:
            report.errors.append(f"{session.path}: not searchable yet ({exc})")
            return
        except _Behind:
            report.errors.append(
                f"{session.path}: the file changed since it was imported; "
                "it is indexed for search after the next import"
            )
            return
        except DatabaseError as exc:  # a lock held too long, a race with another pass
            report.errors.append(f"{session.path}: not searchable yet ({exc}); tried again later")
            return
        report.lines += lines
        if lines and not counted:
            report.sessions += 1
            counted = True
        if done:
            return


def words_top() -> int | None:
    """SQLite: the newest text's id, after which `words_fill` starts; None elsewhere."""
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {SearchText._meta.db_table}")  # noqa: S608
        return cursor.fetchone()[0]


def words_fill(top: int | None) -> None:
    """SQLite: put the words of the texts stored after `top` into the FTS5 index.

    One statement per transaction, not a trigger per text (migration 0025): FTS5 writes
    what it holds to disk at every commit and savepoint, and many tiny segments cost
    more to merge again than the words cost to index.
    """
    if top is None:
        return
    table = SearchText._meta.db_table
    with connection.cursor() as cursor:
        sql = f"INSERT INTO search_fts(rowid, text) SELECT id, text FROM {table} WHERE id > %s"  # noqa: S608
        cursor.execute(sql, [top])


class _Behind(Exception):
    """A line is not what the index says: the import has to catch up first."""


def _slice(session: Session, agent: Agent, report: SearchReport) -> tuple[bool, int]:
    """Index the next slice of lines; (whether the session is now whole, lines covered)."""
    # Locked, so an import of the same file waits (SQLite: every transaction is
    # IMMEDIATE and holds the write lock from its start).
    state = (
        Session.objects.select_for_update()
        .filter(pk=session.pk)
        .values_list("search_lines", "line_count")
        .first()
    )
    if state is None:
        return True, 0
    low, count = state
    if low >= count:
        return True, 0
    high = min(count, low + SLICE_LINES)
    rows = list(
        Record.objects.filter(
            session=session,
            line__gte=low,
            line__lt=high,
            kind__in=SEARCHABLE_KINDS,
            search_text__isnull=True,
        )
        .order_by("line")
        .values_list("line", "uuid", "offset", "length", "digest", "kind")
    )
    known = _texts_by_uuid([r[1] for r in rows if r[1]])
    links: list[tuple[int, int]] = []  # (text id, line)
    new: list[tuple[str, str, str]] = []  # (uuid, part, text)
    new_lines: list[list[int]] = []  # the lines holding each new text
    pending: dict[str, int] = {}  # uuid (or a title) -> index into `new`
    read = 0
    with session_open(session) as f:
        for line, uuid, offset, length, digest, kind in rows:
            if uuid in known:
                links.append((known[uuid], line))
                report.linked += 1
                continue
            if uuid and uuid in pending:
                new_lines[pending[uuid]].append(line)
                continue
            if read >= SLICE_BYTES:
                high = line  # the rest is the next slice's
                break
            f.seek(offset)
            raw = f.read(length)
            read += length
            if len(raw) != length or crc32(raw) != digest:
                raise _Behind
            found = searchable(agent, raw, kind)
            if found is None:
                continue
            key = uuid
            if not uuid and kind == TITLE:
                # The CLIs write a session's title again and again: one text per title.
                key = "title\x00" + found[1]
                if key not in pending and (held := _title_held(session, found[1])) is not None:
                    links.append((held, line))
                    continue
            if key and key in pending:
                new_lines[pending[key]].append(line)
                continue
            if key:
                pending[key] = len(new)
            new.append((uuid, *found))
            new_lines.append([line])
    ids = _new_ids(len(new))
    if new:
        _texts_insert([(i, *values) for i, values in zip(ids, new, strict=True)])
        report.stored += len(new)
        report.text_bytes += sum(len(values[2]) for values in new)
    for i, lines in zip(ids, new_lines, strict=True):
        links.extend((i, line) for line in lines)
    if links:
        table = Record._meta.db_table
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {table} SET search_text_id = %s WHERE session_id = %s AND line = %s",  # noqa: S608
                [(text_id, session.pk, line) for text_id, line in links],
            )
    Session.objects.filter(pk=session.pk).update(search_lines=high)
    return high >= count, high - low


def _texts_insert(rows: list[tuple[int, str, str, str]]) -> None:
    """Store the texts, many rows per statement.

    One statement for many rows, not one per row: fewer round trips, and one
    statement journal instead of one per text. PostgreSQL: each text's pieces with it.
    """
    table = SearchText._meta.db_table
    insert = f"INSERT INTO {table} (id, uuid, part, text) VALUES {{marks}}"  # noqa: S608
    if connection.vendor == "postgresql":
        # The texts' pieces (SearchChunk) in the same statement, cut from the folded copy
        # the database made: Python's `lower` is not PostgreSQL's for every character.
        insert = (
            f"WITH new AS ({insert} RETURNING id, folded) "  # noqa: S608
            f"INSERT INTO {SearchChunk._meta.db_table} (text_id, n, folded) "
            f"SELECT new.id, g.n, substr(new.folded, g.n * {CHUNK_STEP} + 1, "
            f"{CHUNK_STEP + CHUNK_OVERLAP}) FROM new, "
            f"generate_series(0, (length(new.folded) - 1) / {CHUNK_STEP}) AS g(n)"
        )
    with connection.cursor() as cursor:
        for start in range(0, len(rows), INSERT_ROWS):
            chunk = rows[start : start + INSERT_ROWS]
            marks = ", ".join(["(%s, %s, %s, %s)"] * len(chunk))
            cursor.execute(insert.format(marks=marks), [value for row in chunk for value in row])


def _title_held(session: Session, title: str) -> int | None:
    """The text of this title if a record of the session already holds it."""
    held = Record.objects.filter(
        session=session, kind=TITLE, search_text__uuid="", search_text__text=title
    )
    return held.values_list("search_text", flat=True).first()


def _texts_by_uuid(uuids: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    unique = sorted(set(uuids))
    table = SearchText._meta.db_table
    # Raw: every slice asks, most find nothing, and the ORM's query costs more than that.
    with connection.cursor() as cursor:
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            # The partial unique index's condition, word for word, or SQLite scans them all.
            cursor.execute(
                f"SELECT uuid, id FROM {table} WHERE uuid IN ({marks}) AND NOT (uuid = '')",  # noqa: S608
                chunk,
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
        # SQLite: this transaction holds the write lock from its start (IMMEDIATE).
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")  # noqa: S608
        top = cursor.fetchone()[0]
        return list(range(top + 1, top + 1 + n))
