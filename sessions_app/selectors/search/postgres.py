"""Search on PostgreSQL: the newest matching texts, through the trigram indexes on the
lower-cased texts (`folded`, migration 0022) and on their pieces (`SearchChunk`,
migration 0028), then the best rows among them (selectors.search)."""

from __future__ import annotations

import json

from django.db import connection
from django.db.backends.utils import CursorWrapper

from ...models import SearchChunk
from .spans import edge_completed, newest_rows, newest_whole_rows
from .turns import PIECE_LIKE, like_pattern, term_match


def postgres_rows(
    terms: list[str], columns: str, filters: str, params: list, *, window: int, limit: int
) -> tuple[list[tuple], bool]:
    """The best `limit` rows (`columns`) among the newest `window` matching rows, and
    whether there were more: the shortest texts first.

    The shortest first, as bm25 would for a term found once, and because a text's length
    is known without reading it: `ts_rank` read every window text's words again and was
    most of a common term's time (and ranked a long output that repeats a word first).
    """
    with connection.cursor() as cursor:
        # The window's texts, newest first: every text at or above the window's edge
        # (SQLite's `rowid >= edge`), with all their rows, ranked here.
        lead = _lead_term(cursor, terms)
        if lead is None:
            rows = newest_whole_rows(cursor, terms, columns, (filters, params), window)
            rows, full = edge_completed(cursor, rows, columns, (filters, params), window)
        else:
            terms = [lead, *(t for t in terms if t != lead)]
            rows, full = newest_rows(cursor, terms, columns, (filters, params), window)
    # octet_length(t.text), r.session_id, r.line: the extra columns of search_spans.EXTRA.
    rows.sort(key=lambda row: row[-4:-1])
    return [row[:-4] for row in rows[:limit]], full


def _lead_term(cursor: CursorWrapper, terms: list[str]) -> str | None:
    """The term looked up in the pieces (the others are checked in the texts it is found
    in): of those short enough for the pieces, the one the planner expects in the fewest;
    None if none is.

    The planner's guess from the column's statistics, not a count: counting a common
    term's pieces costs as much as finding its texts.
    """
    short = [t for t in terms if term_match(t) == PIECE_LIKE]
    if len(short) < 2:
        return short[0] if short else None
    guesses = []
    for term in short:
        cursor.execute(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM "  # noqa: S608
            f"{SearchChunk._meta.db_table} c WHERE c.folded LIKE lower(%s)",
            [like_pattern(term)],
        )
        plan = cursor.fetchone()[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        guesses.append((plan[0]["Plan"]["Plan Rows"], -len(term), term))
    return min(guesses)[2]
