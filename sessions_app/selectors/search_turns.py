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

from ..models import Record, SearchText, Session

TERM_WINDOW = 20_000  # matches of one term looked at, newest first
# PostgreSQL: `ILIKE` with the text lower-cased once, when it was stored (migration 0022).
FOLDED_LIKE = "t.folded LIKE lower(%s)"


def turn_rows(terms: list[str], columns: str, filters: str, params: list, limit: int) -> list:
    """Rows of records holding the first term, in turns where every term occurs."""
    record, session = Record._meta.db_table, Session._meta.db_table
    text = SearchText._meta.db_table
    joins = f"JOIN {record} r ON r.search_text_id = {{t}} JOIN {session} s ON s.id = r.session_id"
    if connection.vendor == "postgresql":
        source, key, match = f"FROM {text} t {joins.format(t='t.id')}", "t.id", FOLDED_LIKE
        values = [like_pattern(t) for t in terms]
        rank = "r.session_id, r.line"
    else:
        source = f"FROM search_fts {joins.format(t='search_fts.rowid')}"
        key, match, rank = "search_fts.rowid", "search_fts MATCH %s", "search_fts.rank"
        values = ['"' + t.replace('"', '""') + '"' for t in terms]
    group = "r.session_id, COALESCE(r.turn, 0)"
    each = (
        f"SELECT * FROM (SELECT {group} {source} WHERE {match}{filters} "  # noqa: S608
        f"ORDER BY {key} DESC LIMIT {TERM_WINDOW}) AS m"
    )
    both = " INTERSECT ".join([each] * len(terms))
    sql = (
        f"SELECT {columns} {source} WHERE {match}{filters} AND ({group}) IN ({both}) "
        f"ORDER BY {rank}, r.session_id, r.line LIMIT %s"
    )
    args = [values[0], *params]
    for value in values:
        args += [value, *params]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*args, limit])
        return cursor.fetchall()


def folded_match(terms: list[str]) -> tuple[str, list[str]]:
    """PostgreSQL: the condition (on text `t`) that every term occurs, and its values."""
    return " AND ".join([FOLDED_LIKE] * len(terms)), [like_pattern(t) for t in terms]


def like_pattern(term: str) -> str:
    """`term` as an `ILIKE` pattern matching it anywhere, its wildcards escaped."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
