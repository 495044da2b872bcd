"""Search across a turn: every term in some record of one turn, though no record holds all.

A turn is a session's records of one turn number; records without one (an abandoned
branch, an inline subagent, a subagent's own file) count as one group of their
session. Each term is found as a case-insensitive substring on both databases
(SQLite's FTS5 trigram `MATCH`, PostgreSQL's trigram `LIKE` on the lower-cased
text), so both give the same turns. A very common term is looked up among its newest
`TERM_WINDOW` matches only.
"""

from __future__ import annotations

from django.db import connection

from ...models import Record, SearchChunk, SearchText, Session
from ...models.search import CHUNK_OVERLAP

TERM_WINDOW = 20_000  # matches of one term looked at, newest first
# A `LIKE` pattern as a subquery: not matched against the column's statistics (spans.py).
PATTERN = "(SELECT lower(%s))"
# PostgreSQL: `ILIKE` with the text lower-cased once, when it was stored (migration 0022).
FOLDED_LIKE = "t.folded LIKE lower(%s)"
# PostgreSQL: a term that fits in a piece's overlap is looked for in the pieces of the
# folded text (migration 0028): the trigram index names pieces, and checking a piece of
# 2,256 characters costs less than checking a whole long output.
PIECE_LIKE = (
    f"t.id IN (SELECT c.text_id FROM {SearchChunk._meta.db_table} c "  # noqa: S608
    "WHERE c.folded LIKE lower(%s))"
)


def turn_rows(terms: list[str], columns: str, filters: str, params: list, limit: int) -> list:
    """Rows of records holding the first term, in turns where every term occurs."""
    if connection.vendor == "postgresql":
        return _postgres_turn_rows(terms, columns, filters, params, limit)
    record, session = Record._meta.db_table, Session._meta.db_table
    joins = f"JOIN {record} r ON r.search_text_id = {{t}} JOIN {session} s ON s.id = r.session_id"
    source = f"FROM words.search_fts AS search_fts {joins.format(t='search_fts.rowid')}"
    key, rank = "search_fts.rowid", "search_fts.rank"
    matches = ["search_fts MATCH %s"] * len(terms)
    values = ['"' + t.replace('"', '""') + '"' for t in terms]
    group = "r.session_id, COALESCE(r.turn, 0)"
    each = (
        "SELECT * FROM (SELECT {group} {source} WHERE {match}{filters} "
        "ORDER BY {key} DESC LIMIT {window}) AS m"
    )
    both = " INTERSECT ".join(
        each.format(
            group=group, source=source, match=m, filters=filters, key=key, window=TERM_WINDOW
        )
        for m in matches
    )
    sql = (
        f"SELECT {columns} {source} WHERE {matches[0]}{filters} AND ({group}) IN ({both}) "
        f"ORDER BY {rank}, r.session_id, r.line LIMIT %s"
    )
    args = [values[0], *params]
    for value in values:
        args += [value, *params]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*args, limit])
        return cursor.fetchall()


def _postgres_turn_rows(
    terms: list[str], columns: str, filters: str, params: list, limit: int
) -> list:
    """`turn_rows` on PostgreSQL: each term's texts found once (`f0`, `f1`, ...), through
    the trigram index of the pieces or of the whole texts, then their records looked up by
    the index, never the first term's texts looked for again for each record, nor every
    record walked to meet them."""
    record, session = Record._meta.db_table, Session._meta.db_table
    text, piece = SearchText._meta.db_table, SearchChunk._meta.db_table
    found = []
    for n, term in enumerate(terms):
        if term_match(term) == PIECE_LIKE:
            sql = f"SELECT DISTINCT c.text_id AS id FROM {piece} c WHERE c.folded LIKE {PATTERN}"  # noqa: S608
        else:
            sql = f"SELECT t.id FROM {text} t WHERE t.folded LIKE {PATTERN}"  # noqa: S608
        found.append(f"f{n} AS MATERIALIZED ({sql})")
    rows = (  # the records (passing the filters) of the texts in `f{n}`
        "FROM f{n} CROSS JOIN LATERAL (SELECT r.session_id, r.line, r.search_text_id, "  # noqa: S608
        f"r.turn, r.active, r.kind, r.sidechain FROM {record} r "
        f"JOIN {session} s ON s.id = r.session_id WHERE r.search_text_id = f{{n}}.id{filters} "
        "OFFSET 0) r"
    )
    group = "r.session_id, COALESCE(r.turn, 0)"
    both = " INTERSECT ".join(
        f"SELECT * FROM (SELECT {group} {rows.format(n=n)} "  # noqa: S608
        f"ORDER BY f{n}.id DESC LIMIT {TERM_WINDOW}) AS m{n}"
        for n in range(len(terms))
    )
    sql = (
        f"WITH {', '.join(found)} SELECT {columns} {rows.format(n=0)} "
        f"WHERE ({group}) IN ({both}) ORDER BY r.session_id, r.line LIMIT %s"
    )
    args = [*map(like_pattern, terms), *params, *(params * len(terms)), limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        return cursor.fetchall()


def term_match(term: str) -> str:
    """PostgreSQL: the condition (on text `t`) that `term` occurs, one `%s` for its pattern.

    In the pieces when the lower-cased term is at most CHUNK_OVERLAP characters long: it
    then lies wholly in some piece of any text holding it, so both find the same texts.
    """
    size = len(term)
    if size <= CHUNK_OVERLAP and not term.isascii():
        # PostgreSQL's `lower` may give another length than Python's outside ASCII.
        with connection.cursor() as cursor:
            cursor.execute("SELECT length(lower(%s))", [term])
            size = cursor.fetchone()[0]
    return PIECE_LIKE if size <= CHUNK_OVERLAP else FOLDED_LIKE


def like_pattern(term: str) -> str:
    """`term` as an `ILIKE` pattern matching it anywhere, its wildcards escaped."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
