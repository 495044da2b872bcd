"""PostgreSQL, filled behind: the import queues each text it stores and a thread cuts the
queued texts' pieces (`SearchChunk`, migration 0031), as SQLite's words are filled behind.
A queued text is not found by its pieces until they are cut, the page says how many wait,
a text deleted while queued leaves the queue, and the pass waits for the thread."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from sessions_app.models import SearchChunk, SearchText
from sessions_app.models.search import CHUNK_STEP, SearchChunkWaiting
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh, words_waiting
from sessions_app.services.searching.pieces_filling import pieces_round

from .test_search_words import SID, _found, _session_file

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's pieces only (SQLite: test_search_words)"
)


@pytest.fixture
def pieces_behind(settings):
    from sessions_app.services.searching.words_filling import fillers_stop

    settings.SEARCH_WORDS_BEHIND = True
    yield
    fillers_stop()  # its connection closed: the test database can be dropped


def _pieces_whole() -> None:
    """Every text not queued has its pieces, all of them, and no queued one has any."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.id, (length(t.folded) - 1) / %s + 1, COUNT(c.n), "
            "EXISTS (SELECT 1 FROM sessions_app_searchchunkwaiting w WHERE w.text_id = t.id) "
            "FROM sessions_app_searchtext t LEFT JOIN sessions_app_searchchunk c "
            "ON c.text_id = t.id GROUP BY t.id",
            [CHUNK_STEP],
        )
        for text_id, wanted, made, queued in cursor.fetchall():
            assert made == (0 if queued else wanted), (text_id, wanted, made, queued)


@pytest.mark.django_db
def test_a_queued_text_is_found_once_its_pieces_are_cut(
    pieces_behind, client, tmp_path: Path
) -> None:
    root, path = _session_file(tmp_path, "zanzibar_quokka")
    # In the test's transaction no thread is kicked: the texts stay queued.
    sessions_import(roots=[root])

    assert words_waiting() == 2
    assert SearchChunk.objects.count() == 0
    assert _found("zanzibar_quokka") == set(), "no pieces yet"
    html = client.get("/search/", {"q": "zanzibar_quokka"}).content.decode()
    assert "2 texts imported a moment ago are not searchable yet" in html

    # Read again from the start: the queued texts go, and leave the queue with them.
    path.write_bytes(path.read_bytes().replace(b"zanzibar", b"xylophones"))
    sessions_import(roots=[root])
    assert words_waiting() == 2
    assert SearchChunkWaiting.objects.count() == SearchText.objects.count() == 2

    with connection.cursor() as cursor:
        assert pieces_round(cursor, texts=1) == 1, "a round takes at most its share"
        assert pieces_round(cursor) == 1
        assert pieces_round(cursor) == 0
    assert words_waiting() == 0
    _pieces_whole()
    assert _found("xylophones_quokka") == {SID}
    assert _found("zanzibar_quokka") == set()
    html = client.get("/search/", {"q": "xylophones_quokka"}).content.decode()
    assert "not searchable yet" not in html


@pytest.mark.django_db(transaction=True)
def test_behind_a_thread_cuts_the_pieces_and_the_pass_waits_for_it(
    pieces_behind, corpus: Path, corpus_roots: list[Path]
) -> None:
    sessions_import(roots=corpus_roots)
    report = search_refresh()

    assert not report.errors, report.errors
    assert words_waiting() == 0
    assert SearchText.objects.count() > 100
    _pieces_whole()
    assert _found("subtract function"), "the fixture corpus's words are found"


@pytest.mark.django_db(transaction=True)
def test_behind_texts_deleted_while_queued_leave_no_pieces_and_no_queue(
    pieces_behind, tmp_path: Path
) -> None:
    root, path = _session_file(tmp_path, "zanzibar_quokka")
    sessions_import(roots=[root])  # kicks the thread: it may be cutting meanwhile
    before = b"zanzibar"
    for word in (b"xylophones", b"marimba", b"glockenspiel"):
        path.write_bytes(path.read_bytes().replace(before, word))
        sessions_import(roots=[root])  # read again: the texts before go, queued or not
        before = word
    assert not search_refresh().errors

    assert words_waiting() == 0
    assert SearchText.objects.count() == 2
    _pieces_whole()
    assert _found("glockenspiel_quokka") == {SID}
    for gone in ("zanzibar_quokka", "xylophones_quokka", "marimba_quokka"):
        assert _found(gone) == set()


@pytest.mark.django_db
def test_texts_queued_behind_are_cut_by_a_pass_with_the_thread_off(
    pieces_behind, settings, tmp_path: Path
) -> None:
    """BRANCHBOARD_SEARCH_WORDS_BEHIND=0 after a run that queued texts: the pass cuts them."""
    root, _ = _session_file(tmp_path, "zanzibar_quokka")
    sessions_import(roots=[root])  # queued (no thread is kicked in the test's transaction)
    assert words_waiting() == 2

    settings.SEARCH_WORDS_BEHIND = False
    report = search_refresh()

    assert report.words == 2 and not report.errors
    assert words_waiting() == 0
    _pieces_whole()
    assert _found("zanzibar_quokka") == {SID}
