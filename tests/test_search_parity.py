"""Both databases give the same hits: each query's texts and sessions are those a plain
scan of the fixture corpus's texts finds, on SQLite (FTS5 trigram) and on PostgreSQL
(trigram `LIKE` on the folded text) alike; the suite runs on both."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db.models import Q

from sessions_app.formats import TITLE
from sessions_app.formats.search_text import query_terms
from sessions_app.models import Record
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.searching import search_refresh

# Words, parts of words, code, phrases, other cases, and nothing: each under ROW_LIMIT
# rows on the fixture corpus, so the whole answer is compared, not its ranking.
QUERIES = [
    "subtract",
    "ubtrac",
    "SUBTRACT",
    "parse_line(",
    "nonexistent_di",
    '"Exit code 4"',
    '"pytest -q"',
    "sub(a, b)",
    "ENOENT",
    "100%",
    "a_b",
    "naïve",
    "Traceback",
    "git commit",
    "xyzzy_nothing_here_123",
]


@pytest.fixture
def indexed(imported: Path) -> Path:
    report = search_refresh()
    assert not report.errors, report.errors
    return imported


def scanned(terms: list[str], everything: bool) -> tuple[set[int], set[int]]:
    """The texts holding every term (a lower-cased scan), and the sessions showing them."""
    records = Record.objects.filter(search_text__isnull=False)
    if not everything:
        records = records.filter(
            Q(active=True) | Q(kind=TITLE) | Q(sidechain=True) | Q(session__is_subagent=True)
        )
    texts, sessions = set(), set()
    for text_id, session_pk, text in records.values_list(
        "search_text_id", "session_id", "search_text__text"
    ):
        low = text.lower()
        if all(t.lower() in low for t in terms):
            texts.add(text_id)
            sessions.add(session_pk)
    return texts, sessions


@pytest.mark.parametrize("everything", [False, True])
def test_each_query_finds_what_a_scan_finds(indexed: Path, everything: bool) -> None:
    some = 0
    for text in QUERIES:
        terms = query_terms(text)
        results = search(SearchQuery(text, everything=everything))
        assert not results.truncated and not results.windowed, text
        texts, sessions = scanned(terms, everything)
        if len(terms) > 1:  # words spread over a turn are found too: a superset
            assert results.texts >= len(texts), text
            assert sessions <= {g.session.pk for g in results.groups}, text
            continue
        assert results.texts == len(texts), text
        assert {g.session.pk for g in results.groups} == sessions, text
        some += bool(texts)
    assert some >= 6  # most queries find something: the comparison is not of empty sets
