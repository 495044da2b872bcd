"""PostgreSQL: the newest rows whose texts hold every term, looked for in spans of the
newest texts (bands of text ids), newest first, until a window's worth is found.

One term, the lead, is looked up in the pieces of the folded texts (`SearchChunk`,
migration 0028): the trigram index names the pieces holding its trigrams among the
span's bands only, and `LIKE` checks each (most of a common term's time: a few ns a
character). The other terms are checked in each text the lead was found in, with
`strpos` on its pieces up to the first holding the term: a text holds a term wherever
it lies in it, in another piece or across a cut (it then lies whole in the piece
before). Terms seldom found together are looked up at once in the whole texts instead.
"""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from ...models import Record, SearchChunk, SearchText, Session
from ...models.search import CHUNK_BAND
from .turns import PIECE_LIKE, like_pattern, term_match

# Texts a span grows by: a band, so the trigram index names no piece outside the span
# (the tests set fewer, to walk a small corpus in several spans).
SPAN_UNIT = CHUNK_BAND
FIRST_SPAN = 2  # units of the newest texts looked at first
# A span after the first is sized for this many times the rows still wanted, at the
# density seen so far: too small costs one more look at the index, too large checks
# pieces that are not needed.
MARGIN = 1.25
# ... and at most this many times the texts looked at so far: the newest texts are no
# sure guide to older ones (a term used more, or less, lately).
GROWTH = 3
# Several terms seldom found together (a span past this share of the texts left): the
# whole texts the trigram index names for all of them are fewer to check than the
# lead's pieces.
WHOLE_SHARE = 4

# A `LIKE` pattern (one `%s`), as a subquery: the planner then neither matches it against
# the column's statistics (milliseconds for each statement, the pieces being long) nor,
# misled by them into thinking a common term rare, leaves the bands out of the index scan
# and checks the term's pieces in every text.
PATTERN = "(SELECT lower(%s))"

# What a span's query adds to the caller's columns: the text's size (the rank), the
# record's session and line (the order among texts of one size) and the text.
EXTRA = "octet_length(t.text), r.session_id, r.line, t.id"


TEXTS = SearchText._meta.db_table
RECORDS = (  # the records showing text `t`, and their sessions
    f"JOIN {Record._meta.db_table} r ON r.search_text_id = t.id "
    f"JOIN {Session._meta.db_table} s ON s.id = r.session_id"
)
# The same for the texts found, with the filters (" AND …" on `r` and `s`) for `{filters}`:
# each text's records and their sessions looked up by the indexes (`OFFSET 0` keeps the
# subquery whole), never the records walked newest first to meet the texts (a merge join
# reads most records when the texts found are old ones) nor every session read for a
# hash (its own milliseconds, when a term is in a few texts).
FOUND_RECORDS = (
    f"JOIN {TEXTS} t ON t.id = found.id CROSS JOIN LATERAL (SELECT r.* FROM "  # noqa: S608
    f"{Record._meta.db_table} r JOIN {Session._meta.db_table} s ON s.id = r.session_id "
    "WHERE r.search_text_id = found.id{filters} OFFSET 0) r"
)


def newest_rows(
    cursor: CursorWrapper, terms: list[str], columns: str, where: tuple[str, list], window: int
) -> tuple[list[tuple], bool]:
    """The rows (`columns` + EXTRA) of the texts holding every term among the newest
    `window` such rows passing `where` (" AND …" and its values), and whether there were
    `window`: the first term, the lead, is looked up in the pieces, span by span.

    A span holding `window` matching rows holds the newest ones; else the next, older
    span is looked at, sized by how many the spans so far held. When that would be most
    of the texts left, the rest are looked at at once: for one term, all its pieces; for
    several, the whole texts the trigram index names for all of them (fewer than the
    lead's pieces when the terms are seldom found together).
    """
    filters, params = where
    lead, rest = terms[0], terms[1:]
    checks = "".join(map(_check, rest))
    found = (
        f"SELECT DISTINCT c.text_id AS id FROM {SearchChunk._meta.db_table} c "  # noqa: S608
        f"WHERE c.folded LIKE {PATTERN}{{bounds}}"
    )
    sql = (
        f"WITH found AS MATERIALIZED ({found}) SELECT {columns}, {EXTRA} "  # noqa: S608
        f"FROM found {FOUND_RECORDS.format(filters=filters)} "
        f"WHERE TRUE{checks} ORDER BY t.id DESC LIMIT %s"
    )
    cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {TEXTS}")  # noqa: S608
    top = cursor.fetchone()[0]
    low, high = (top // SPAN_UNIT - FIRST_SPAN + 1) * SPAN_UNIT, None
    rows: list[tuple] = []
    while low > 0:
        bounds, values = _bounds(low, high)
        cursor.execute(
            sql.format(bounds=bounds),
            [like_pattern(lead), *values, *params, *rest, window - len(rows)],
        )
        rows += cursor.fetchall()
        if len(rows) >= window:
            return edge_completed(cursor, rows, columns, where, window)
        looked, high = top - low + 1, low - 1
        size = MARGIN * (window - len(rows)) * looked / len(rows) if rows else high
        if size >= high or (rest and size > high / WHOLE_SHARE):
            break  # all the texts left, or most: at once
        size = min(size, GROWTH * looked)
        low -= max(round(size / SPAN_UNIT), 1) * SPAN_UNIT
    if rest:  # the texts not looked at yet, whole
        older = newest_whole_rows(cursor, terms, columns, where, window - len(rows), high)
        return edge_completed(cursor, rows + older, columns, where, window)
    # All the pieces at once, the newest again: a range of all bands is a long list of
    # pieces for the index to read, more than the few newest texts seen again.
    cursor.execute(sql.format(bounds=""), [like_pattern(lead), *params, window])
    return edge_completed(cursor, cursor.fetchall(), columns, where, window)


def _check(term: str) -> str:
    """The condition (on text `t`, one `%s` for `term`) that `term` occurs in the text:
    in some piece when the pieces serve it (read up to the first holding it; most texts
    holding the lead hold the others near it), else in the whole text."""
    if term_match(term) == PIECE_LIKE:
        return (
            f" AND EXISTS (SELECT FROM {SearchChunk._meta.db_table} p "
            "WHERE p.text_id = t.id AND strpos(p.folded, lower(%s)) > 0)"
        )
    return " AND strpos(t.folded, lower(%s)) > 0"


def newest_whole_rows(
    cursor: CursorWrapper,
    terms: list[str],
    columns: str,
    where: tuple[str, list],
    window: int,
    high: int | None = None,
) -> list[tuple]:
    """The rows (`columns` + EXTRA) of the newest `window` rows passing `where` whose
    texts (up to id `high`) hold every term, newest first: the whole texts the trigram
    index names for all terms, then their rows (never the texts walked newest first,
    which the planner may pick for common terms and which reads most texts)."""
    filters, params = where
    below = "" if high is None else " AND t.id <= %s"
    found = " AND ".join([f"t.folded LIKE {PATTERN}"] * len(terms))
    cursor.execute(
        f"WITH found AS MATERIALIZED (SELECT t.id FROM {TEXTS} t WHERE {found}{below}) "  # noqa: S608
        f"SELECT {columns}, {EXTRA} FROM found {FOUND_RECORDS.format(filters=filters)} "
        "ORDER BY t.id DESC LIMIT %s",
        [*map(like_pattern, terms), *([] if high is None else [high]), *params, window],
    )
    return cursor.fetchall()


def _bounds(low: int, high: int | None) -> tuple[str, list]:
    """The condition (on piece `c`) that its text is in ids `low` to `high` (None: the
    newest), and its values: the bands, which
    the index holds, and the ids where the span cuts a band.

    The bands listed, each looked up in the index: a range of them is a partial match,
    read whole, and `<=` would read the bands of every older text too."""
    values: list[int | list[int]]
    if high is None:  # and any text stored since the search began
        sql, values = f" AND (c.text_id / {CHUNK_BAND}) >= %s::bigint", [low // CHUNK_BAND]
    else:
        bands = list(range(low // CHUNK_BAND, high // CHUNK_BAND + 1))
        sql, values = f" AND (c.text_id / {CHUNK_BAND}) = ANY(%s::bigint[])", [bands]
    if low % CHUNK_BAND:
        sql, values = sql + " AND c.text_id >= %s", [*values, low]
    if high is not None and (high + 1) % CHUNK_BAND:
        sql, values = sql + " AND c.text_id <= %s", [*values, high]
    return sql, values


def edge_completed(
    cursor: CursorWrapper, rows: list[tuple], columns: str, where: tuple[str, list], window: int
) -> tuple[list[tuple], bool]:
    """`rows` (newest text first) and the rows of its oldest text that the window left out
    (every row of a text counts, as in a ranking of the texts' rows), and whether the
    window was full."""
    if len(rows) < window:
        return rows, False
    edge = rows[-1][-1]
    filters, params = where
    cursor.execute(
        f"SELECT {columns}, {EXTRA} FROM {TEXTS} t {RECORDS} "  # noqa: S608
        f"WHERE t.id = %s{filters}",
        [edge, *params],
    )
    held = {row[-3:-1] for row in rows}
    return rows + [row for row in cursor.fetchall() if row[-3:-1] not in held], True
