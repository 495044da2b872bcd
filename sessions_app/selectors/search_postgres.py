"""Search on PostgreSQL: the newest matching texts, through the trigram indexes on the
lower-cased texts (`folded`, migration 0022) and on their pieces (`SearchChunk`,
migration 0028), then the best rows among them (selectors.search)."""

from __future__ import annotations

from django.db import connection
from django.db.backends.utils import CursorWrapper

from ..models import Record, SearchChunk, SearchText, Session
from ..models_search import CHUNK_BAND
from .search_turns import folded_match, like_pattern, piece_term

PIECE_SPAN = 8  # newest texts looked at first, in windows' worth of rows


def postgres_rows(
    terms: list[str], columns: str, filters: str, params: list, *, window: int, limit: int
) -> tuple[list[tuple], bool]:
    """The best `limit` rows (`columns`) among the newest `window` matching rows, and
    whether there were more: the shortest texts first.

    The shortest first, as bm25 would for a term found once, and because a text's length
    is known without reading it: `ts_rank` read every window text's words again and was
    most of a common term's time (and ranked a long output that repeats a word first).
    """
    text, record = SearchText._meta.db_table, Record._meta.db_table
    session = Session._meta.db_table
    joins = (
        f"FROM {text} t JOIN {record} r ON r.search_text_id = t.id "
        f"JOIN {session} s ON s.id = r.session_id"
    )
    match, values = folded_match(terms)
    with connection.cursor() as cursor:
        # The window's texts, newest first: every text at or above the window's edge
        # (SQLite's `rowid >= edge`), so ranking them needs no second look at the text.
        # Several terms: the whole texts, the index naming those with every term's
        # trigrams (or, for common terms, walking the texts newest first).
        if (term := piece_term(terms)) is not None:
            ids = _newest_in_pieces(cursor, term, filters, params, window)
        else:
            cursor.execute(
                f"SELECT t.id {joins} WHERE {match}{filters} ORDER BY t.id DESC LIMIT %s",
                [*values, *params, window],
            )
            ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return [], False
        cursor.execute(
            f"SELECT {columns} {joins} WHERE r.search_text_id = ANY(%s){filters} "
            "ORDER BY octet_length(t.text), r.session_id, r.line LIMIT %s",
            [sorted(set(ids)), *params, limit],
        )
        return cursor.fetchall(), len(ids) >= window


def _newest_in_pieces(
    cursor: CursorWrapper, term: str, filters: str, params: list, window: int
) -> list[int]:
    """The text ids of the newest `window` rows matching `term`, looked for in the pieces
    of the newest texts first.

    Walking the texts newest first checks every text on the way, most of them without
    the term; the index finds the pieces holding its trigrams among a span of the newest
    texts (their bands of ids), and only those are checked. A span holding `window`
    matching rows holds the newest ones, so it is the answer; else a wider one, sized
    by how many the last one held, up to all texts.
    """
    record, session = Record._meta.db_table, Session._meta.db_table
    found = (
        f"SELECT DISTINCT c.text_id FROM {SearchChunk._meta.db_table} c "  # noqa: S608
        "WHERE c.folded LIKE lower(%s){span}"
    )
    sql = (
        f"WITH found AS MATERIALIZED ({found}) SELECT found.text_id FROM found "  # noqa: S608
        f"JOIN {record} r ON r.search_text_id = found.text_id "
        f"JOIN {session} s ON s.id = r.session_id WHERE TRUE{filters} "
        "ORDER BY found.text_id DESC LIMIT %s"
    )
    band = f" AND (c.text_id / {CHUNK_BAND}) >= %s::bigint AND c.text_id >= %s"
    cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {SearchText._meta.db_table}")  # noqa: S608
    top = cursor.fetchone()[0]
    span = PIECE_SPAN * window
    while True:
        low = top - span + 1
        if low <= 1:
            cursor.execute(sql.format(span=""), [like_pattern(term), *params, window])
            return [row[0] for row in cursor.fetchall()]
        cursor.execute(
            sql.format(span=band),
            [like_pattern(term), low // CHUNK_BAND, low, *params, window],
        )
        ids = [row[0] for row in cursor.fetchall()]
        if len(ids) >= window:
            return ids
        # Wide enough for half as many again as the rows wanted, at the density seen (it
        # thins out going back, mostly); none seen: all.
        span = span * 3 * window // (2 * len(ids)) if ids else top
