"""Several words on PostgreSQL: the lead term looked up in the pieces, span by span of the
newest texts, the others checked in each text it is found in (or the whole texts the
trigram index names for all of them): the same texts as a full scan, the words in
different pieces of a text or across a cut, on both databases.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Max

from sessions_app.models import SearchText
from sessions_app.models.search import CHUNK_OVERLAP, CHUNK_STEP
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .test_search_pieces import FILL, _session

ALPHA, BETA = "Qzalpha_Mark", "qzbeta_mark"
LONG = "qzlong_" + "w" * CHUNK_OVERLAP  # too long for the pieces: the whole text is read
SIZE = 3 * CHUNK_STEP  # three pieces: [0, 2256), [2000, 4256), [4000, 6000)
ACROSS = 2 * CHUNK_STEP - 5  # across the cut into the third piece, whole in the second
ONLY_THIRD = 2 * CHUNK_STEP + 500  # in the third piece only
# LONG starting here runs past the end of the first piece: no piece holds it whole.
NO_PIECE = CHUNK_STEP - 3


def _placed(size: int, terms: dict[int, str]) -> str:
    """A text of `size` characters holding each term at its place, filler around them."""
    text = list((FILL * (size // len(FILL) + 1))[:size])
    for start, term in terms.items():
        text[start : start + len(term)] = term
    return "".join(text)


# (the text, whether it holds ALPHA and BETA, whether it holds ALPHA and LONG)
TEXTS = [
    (_placed(SIZE, {100: ALPHA, ONLY_THIRD: BETA}), True, False),  # first and third piece
    (_placed(SIZE, {100: ALPHA, ACROSS: BETA}), True, False),  # BETA across a cut
    (_placed(SIZE, {ONLY_THIRD: BETA, 100: ALPHA.upper()}), True, False),
    (_placed(SIZE, {100: ALPHA}), False, False),  # ALPHA alone
    (_placed(SIZE, {ONLY_THIRD: BETA}), False, False),  # BETA alone
    (_placed(SIZE, {NO_PIECE: LONG, ONLY_THIRD: ALPHA}), False, True),
    (_placed(SIZE, {NO_PIECE: LONG}), False, False),  # LONG alone
    (f"{BETA} and {ALPHA} in one short reply", True, False),
]


def _holding(terms: list[str]) -> int:
    """How many texts hold every term, any case: the full scan a search must agree with."""
    low = [t.lower() for t in terms]
    texts = SearchText.objects.values_list("text", flat=True)
    return sum(all(t in text.lower() for t in low) for text in texts)


def _shown(results) -> tuple:
    """What a search shows, hit by hit, and whether it ranked a window."""
    hits = [(g.session.pk, g.more, [(h.line, h.snippet) for h in g.hits]) for g in results.groups]
    return results.texts, results.windowed, hits


def test_words_in_different_pieces_of_a_text_are_found_like_the_full_scan(
    tmp_path: Path, db
) -> None:
    sessions_import(roots=[_session(tmp_path / "root", [t for t, _, _ in TEXTS]).parent.parent])
    assert not search_refresh().errors
    both = sum(held for _, held, _ in TEXTS)
    with_long = sum(held for _, _, held in TEXTS)
    for query, want in [
        (f"{ALPHA} {BETA}", both),
        (f"{BETA.upper()} {ALPHA.lower()}", both),
        (f"{ALPHA[1:-1]} {BETA[2:]}", both),
        (f"{ALPHA} {LONG}", with_long),
        (f"{LONG} {BETA}", 0),
    ]:
        terms = query.split()
        assert _holding(terms) == want, query
        results = search(SearchQuery(query, everything=True))
        # Each reply is a turn of its own, with a prompt holding neither word: the words
        # spread over a turn find no more texts than hold them all.
        assert results.texts == want, query


@pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="the pieces exist on PostgreSQL only"
)
@pytest.mark.parametrize("lead", [0, -1])
def test_whichever_word_leads_the_same_texts_are_found(
    tmp_path: Path, db, monkeypatch, lead: int
) -> None:
    """The lead found in the pieces of every text (one span from the first), the other
    words in the texts it is found in; or every text looked at whole. The texts holding
    every word, not those of a turn holding them (`search` adds those, which would hide
    a text missed here)."""
    from sessions_app.selectors.search import COLUMNS
    from sessions_app.selectors.search import postgres as search_postgres
    from sessions_app.selectors.search import spans as search_spans

    sessions_import(roots=[_session(tmp_path / "root", [t for t, _, _ in TEXTS]).parent.parent])
    search_refresh()
    top = SearchText.objects.aggregate(top=Max("id"))["top"]
    from sessions_app.selectors.search.turns import PIECE_LIKE, term_match

    def first_or_last(cursor, terms: list[str]) -> str:  # of those the pieces serve
        return [t for t in terms if term_match(t) == PIECE_LIKE][lead]

    monkeypatch.setattr(search_postgres, "_lead_term", first_or_last)
    for unit, first in ((1, top), (10**9, 2)):
        monkeypatch.setattr(search_spans, "SPAN_UNIT", unit)
        monkeypatch.setattr(search_spans, "FIRST_SPAN", first)
        for query in (f"{ALPHA} {BETA}", f"{ALPHA} {LONG}", f"{BETA} {ALPHA} mark"):
            terms = query.split()
            rows, _ = search_postgres.postgres_rows(terms, COLUMNS, "", [], window=99, limit=99)
            assert len({row[2] for row in rows}) == _holding(terms) > 0, (query, unit)


@pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="the pieces exist on PostgreSQL only"
)
def test_the_span_walk_ranks_the_same_rows_as_all_texts_at_once(
    imported: Path, monkeypatch
) -> None:
    """A common term's newest matches, looked for in spans of the newest texts that grow
    until one holds a window's worth (the other words checked in the texts found, or the
    rest of the texts looked at whole), are those a look at every text finds."""
    from django.test.utils import CaptureQueriesContext

    from sessions_app.selectors import search as search_module
    from sessions_app.selectors.search import spans as search_spans

    search_refresh()
    monkeypatch.setattr(search_module, "RANK_WINDOW", 5)
    queries = ["the", "file", "ubtrac", '"no such file"', "error file", "the file error"]
    queries += ['"no such" file', "session ubtrac", "def return self"]
    spans = wholes = 0
    for query in queries:
        for everything in (False, True):
            monkeypatch.setattr(search_spans, "SPAN_UNIT", 10**9)  # every text at once
            whole = _shown(search(SearchQuery(query, everything=everything)))
            monkeypatch.setattr(search_spans, "SPAN_UNIT", 1)
            for share in (1e-9, 10**9):  # the lead's spans to the first text; one span
                monkeypatch.setattr(search_spans, "WHOLE_SHARE", share)
                with CaptureQueriesContext(connection) as seen:
                    spanned = _shown(search(SearchQuery(query, everything=everything)))
                assert spanned == whole, (query, everything, share)
                sql = [q["sql"] for q in seen.captured_queries]
                spans += sum("c.text_id >= " in q for q in sql)
                wholes += sum("SELECT t.id FROM" in q and "t.id <= " in q for q in sql)
    assert spans >= 20, "the spans were looked at"
    assert wholes >= 2, "the texts older than the spans were looked at whole"
