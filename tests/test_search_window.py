"""SQLite: the rows a very common term is ranked among, found in one walk of its newest
matches, are those of every text at or above the window's edge (all of a text's rows,
forks' copies too), ranked as bm25 ranks them: what a walk to the edge, then a ranking
of the rows at or above it, gave."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from sessions_app.models import Record, Session
from sessions_app.selectors import search as search_module
from sessions_app.selectors.search import COLUMNS, SearchQuery, search_filters
from sessions_app.services.branching import session_fork
from sessions_app.services.searching import search_refresh

WEBAPP = "d62afd75-12b1-4077-921c-1fa1eda79364"


def _ranked_at_or_above_edge(term: str, window: int, limit: int) -> tuple[list[tuple], bool]:
    """The rows as two statements gave them: the window's edge, then every row at or above
    it, ranked."""
    filters, params = search_filters(SearchQuery(term))
    base = (
        "FROM words.search_fts AS search_fts "
        f"JOIN {Record._meta.db_table} r ON r.search_text_id = search_fts.rowid "
        f"JOIN {Session._meta.db_table} s ON s.id = r.session_id WHERE search_fts MATCH %s{filters}"
    )
    match = f'"{term}"'
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT search_fts.rowid {base} ORDER BY search_fts.rowid DESC LIMIT 1 OFFSET %s",
            [match, *params, window - 1],
        )
        edge = cursor.fetchone()
        cursor.execute(
            f"SELECT {COLUMNS} {base}{' AND search_fts.rowid >= %s' if edge else ''} "
            "ORDER BY search_fts.rank, r.session_id, r.line LIMIT %s",
            [match, *params, *([edge[0]] if edge else []), limit],
        )
        return cursor.fetchall(), edge is not None


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's FTS5 walk")
def test_one_walk_ranks_the_rows_two_statements_ranked(imported: Path) -> None:
    webapp = Session.objects.get(session_id=WEBAPP)
    session_fork(session=webapp, turn=2)  # its copies share their texts: a text, many rows
    session_fork(session=webapp, turn=3)
    assert not search_refresh().errors
    filters, params = search_filters(SearchQuery("the"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_module, "RANK_WINDOW", 10**6)
        patch.setattr(search_module, "ROW_LIMIT", 10**6)
        every, windowed = search_module._record_rows(["the"], filters, params)
    assert not windowed
    newest = sorted((row[2] for row in every), reverse=True)  # text ids, a row each
    # Windows whose edge falls inside a text of several rows, and a few others.
    cut = [n for n in range(1, len(newest)) if newest[n - 1] == newest[n]]
    assert cut, "no text of several rows among the matches"
    for window in {*cut, 1, 2, len(newest) // 2, len(newest), len(newest) + 1}:
        for limit in (3, len(every) + 1):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(search_module, "RANK_WINDOW", window)
                patch.setattr(search_module, "ROW_LIMIT", limit)
                got = search_module._record_rows(["the"], filters, params)
            assert got == _ranked_at_or_above_edge("the", window, limit), (window, limit)
