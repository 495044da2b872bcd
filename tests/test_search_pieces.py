"""PostgreSQL looks a short term up in pieces of the folded texts (`SearchChunk`): a term
lying across the cut between two pieces is found as in the whole text, on both databases,
and the pieces follow their texts as the search pass stores and a re-import removes them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import DatabaseError, connection, transaction

from sessions_app.models import SearchText
from sessions_app.models.search import CHUNK_OVERLAP, CHUNK_STEP
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import TRIGRAM_INDEXES, search_refresh

from .factories import assistant_record, jsonl, user_record

SID = "3c1d9e7a-5b2f-4a6c-8d0e-7f1a2b3c4d5e"
FILL = "lorem ipsum dolor sit amet "


def _padded(term: str, start: int, size: int) -> str:
    """A text of `size` characters holding `term` at `start`, filler around it."""
    head = (FILL * (start // len(FILL) + 1))[:start]
    text = head + term
    return text + (FILL * ((size - len(text)) // len(FILL) + 1))[: size - len(text)]


# (term, where it starts in its text): across the first and the second cut, the longest
# term the pieces serve starting at the last place of a piece's own part, a term too long
# for them (the whole text is searched), and one at the very end of a text.
LONGEST = "q" + "zx" * ((CHUNK_OVERLAP - 2) // 2) + "w"
PLACED = [
    ("Qzcut_First_1990", CHUNK_STEP - 10),
    ("qzcut_second_3995", 2 * CHUNK_STEP - 5),
    (LONGEST, CHUNK_STEP - 1),
    ("qzlong_" + "y" * CHUNK_OVERLAP, CHUNK_STEP - 100),
]
TAIL = "qzcut_at_the_very_end"


def _session(root: Path, texts: list[str]) -> Path:
    """A session of one prompt and one reply per text."""
    records = []
    for n, text in enumerate(texts):
        parent = records[-1]["uuid"] if records else None
        records.append(user_record(f"prompt {n}", sid=SID, parent=parent))
        records.append(assistant_record(text, sid=SID, parent=records[-1]["uuid"]))
    folder = root / "-work-pieces"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SID}.jsonl"
    path.write_bytes(jsonl(records))
    return path


def _texts_holding(term: str) -> int:
    """How many texts hold `term`, any case: the full scan a search must agree with."""
    low = term.lower()
    return sum(low in t.lower() for t in SearchText.objects.values_list("text", flat=True))


def _pieces_out_of_step() -> int:
    """PostgreSQL: pieces missing, stale or left over against the texts' folded copies."""
    cut = (
        f"SELECT t.id, g.n, substr(t.folded, g.n * {CHUNK_STEP} + 1, "
        f"{CHUNK_STEP + CHUNK_OVERLAP}) FROM sessions_app_searchtext t, "
        f"generate_series(0, (length(t.folded) - 1) / {CHUNK_STEP}) AS g(n)"
    )
    held = "SELECT text_id, n, folded FROM sessions_app_searchchunk"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM (({cut} EXCEPT {held}) UNION ALL ({held} EXCEPT {cut})) AS d"
        )
        return cursor.fetchone()[0]


def test_a_short_term_lies_wholly_in_some_piece() -> None:
    for size in (1, 2, CHUNK_OVERLAP):
        for start in range(0, 3 * CHUNK_STEP):
            n = start // CHUNK_STEP
            assert start + size <= n * CHUNK_STEP + CHUNK_STEP + CHUNK_OVERLAP


def test_a_term_across_a_cut_is_found_like_the_full_scan(tmp_path: Path, db) -> None:
    texts = [_padded(term, start, 3 * CHUNK_STEP) for term, start in PLACED]
    texts.append(_padded(TAIL, 5 * CHUNK_STEP - len(TAIL), 5 * CHUNK_STEP))
    sessions_import(roots=[_session(tmp_path / "root", texts).parent.parent])
    report = search_refresh()
    assert not report.errors, report.errors
    stored = list(SearchText.objects.values_list("text", flat=True))
    for term, start in [*PLACED, (TAIL, 5 * CHUNK_STEP - len(TAIL))]:
        assert any(t.find(term) == start for t in stored), "the term is where it was put"
        for query in (term, term.upper(), term[1:-1].lower()):
            results = search(SearchQuery(query, everything=True))
            assert results.texts == _texts_holding(query) == 1, query
            assert [str(g.session.session_id) for g in results.groups] == [SID]


@pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="the pieces exist on PostgreSQL only"
)
def test_the_pieces_follow_their_texts_through_a_re_import(tmp_path: Path, db) -> None:
    long = _padded("qzold_marker_in_a_long_text", CHUNK_STEP - 3, 4 * CHUNK_STEP + 7)
    path = _session(tmp_path / "root", [long, "a short qzkept reply", "qzgone short reply"])
    sessions_import(roots=[path.parent.parent])
    search_refresh()
    # This test's texts only: other tests' sessions may be in the database too.
    ours = list(SearchText.objects.filter(text__contains="qz").values_list("pk", flat=True))
    assert len(ours) == 3
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), max(n) FROM sessions_app_searchchunk WHERE text_id = ANY(%s)",
            [ours],
        )
        assert cursor.fetchone() == (len(ours) + 4, 4)
    assert _pieces_out_of_step() == 0
    # The file read again from the start: one text changed, one gone, one new.
    changed = long.replace("qzold_marker", "qznew_marker")
    path = _session(tmp_path / "root", [changed, "a short qzkept reply", "a qzfresh reply"])
    sessions_import(roots=[path.parent.parent])
    search_refresh()
    assert _pieces_out_of_step() == 0
    for gone in ("qzold_marker", "qzgone"):
        assert search(SearchQuery(gone, everything=True)).texts == 0
    for kept in ("qznew_marker", "qzkept", "qzfresh"):
        assert search(SearchQuery(kept, everything=True)).texts == _texts_holding(kept) == 1


@pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="the pieces exist on PostgreSQL only"
)
def test_the_pass_leaves_no_pending_entries_for_searches_to_read(tmp_path: Path, db) -> None:
    with connection.cursor() as cursor:
        try:
            with transaction.atomic():
                cursor.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        except DatabaseError:
            pytest.skip("pgstattuple cannot be created here")
    imported = sessions_import(
        roots=[_session(tmp_path / "root", ["a qzpending reply"]).parent.parent]
    )
    assert imported.records and not search_refresh().errors  # the import stored its texts
    with connection.cursor() as cursor:
        for index in TRIGRAM_INDEXES:
            cursor.execute("SELECT pending_pages FROM pgstatginindex(%s::regclass)", [index])
            assert cursor.fetchone()[0] == 0, index
    assert search(SearchQuery("qzpending")).texts == 1
