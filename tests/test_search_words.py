"""The import stores each record's search text from its own read of the line (one pass), and
SQLite's word index (FTS5) is filled afterwards from a watermark (migration 0030): a text
deleted before its words went in leaves the index whole, and no text is given an id the
watermark has passed."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from sessions_app.models import Record, SearchText, Session
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.hub.indexing import hub_import
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh, words_waiting

from .factories import assistant_record, jsonl, user_record

pytestmark = pytest.mark.django_db

SID = "5d7f3a10-8c2e-4b6a-9f41-0e2d3c4b5a69"


def _session_file(tmp_path: Path, words: str) -> tuple[Path, Path]:
    root = tmp_path / "projects"
    path = root / "-home-dev-words" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    prompt = user_record(f"please look at {words}", sid=SID)
    reply = assistant_record(f"looked at {words}", sid=SID, parent=prompt["uuid"])
    path.write_bytes(jsonl([prompt, reply]))
    return root, path


def _found(term: str) -> set[str]:
    return {str(g.session.session_id) for g in search(SearchQuery(term)).groups}


def _index_whole() -> None:
    """SQLite: FTS5's own check of the index, and the texts whose words it holds are the
    texts there are (a text deleted took its words with it, none is missing)."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO words.search_fts(search_fts) VALUES ('integrity-check')")
            cursor.execute("SELECT id FROM words.held ORDER BY id")
            held = [row[0] for row in cursor.fetchall()]
        assert held == list(SearchText.objects.order_by("pk").values_list("pk", flat=True))


def test_the_import_stores_the_texts_and_the_pass_adds_only_their_words(tmp_path: Path) -> None:
    root, _ = _session_file(tmp_path, "zanzibar_quokka")

    sessions_import(roots=[root])

    session = Session.objects.get(session_id=SID)
    assert session.search_lines == session.line_count == 2
    texts = Record.objects.filter(session=session).exclude(search_text=None)
    assert sorted(texts.values_list("search_text__part", flat=True)) == ["prompt", "reply"]
    report = search_refresh()
    assert (report.sessions, report.stored) == (0, 0), "the pass read no line again"
    assert SID in _found("zanzibar_quokka")
    assert words_waiting() == 0


def test_without_texts_the_search_pass_reads_them(tmp_path: Path) -> None:
    """A hub's commit of a big file indexes its records only; its next request the rest."""
    root, path = _session_file(tmp_path, "zanzibar_quokka")

    hub_import(root, path, catch_up=False)

    session = Session.objects.get(session_id=SID)
    assert (session.search_lines, session.line_count) == (0, 2)
    assert not Record.objects.filter(session=session).exclude(search_text=None).exists()
    report = search_refresh()
    assert (report.sessions, report.stored) == (1, 2)
    assert SID in _found("zanzibar_quokka")


@pytest.mark.parametrize("round_rows", [5_000, 1])
def test_texts_gone_before_their_words_went_in_leave_the_index_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, round_rows: int
) -> None:
    """With rounds of one text, the texts deleted are more than a round takes: every one is
    weighed before `up_to` moves past its id (the CI run where this was not so broke the
    index: "database disk image is malformed")."""
    from sessions_app.services.searching import words

    monkeypatch.setattr(words, "ROUND_ROWS", round_rows)
    root, path = _session_file(tmp_path, "zanzibar_quokka")
    sessions_import(roots=[root])  # texts stored, their words not yet in the index
    assert words_waiting() == (2 if connection.vendor == "sqlite" else 0)

    path.write_bytes(path.read_bytes().replace(b"zanzibar", b"xylophones"))
    sessions_import(roots=[root])  # read again from the start: the first texts go
    assert not search_refresh().errors

    _index_whole()
    assert _found("xylophones_quokka") == {SID}
    assert _found("zanzibar_quokka") == set()
    # Words taken out that never went in do not fail at once: the index breaks when the
    # words that did go in are taken out.
    path.write_bytes(path.read_bytes().replace(b"xylophones", b"marimba"))
    sessions_import(roots=[root])
    assert not search_refresh().errors
    _index_whole()
    assert _found("marimba_quokka") == {SID}


def test_a_text_deleted_after_its_words_went_in_gives_its_id_to_no_other(tmp_path: Path) -> None:
    root, path = _session_file(tmp_path, "zanzibar_quokka")
    sessions_import(roots=[root])
    search_refresh()
    top = SearchText.objects.order_by("-pk").values_list("pk", flat=True).first()

    path.write_bytes(path.read_bytes().replace(b"zanzibar", b"xylophones"))
    sessions_import(roots=[root])  # the texts with the top ids went with their words
    search_refresh()

    assert SearchText.objects.order_by("pk").values_list("pk", flat=True).first() > top
    _index_whole()
    assert _found("xylophones_quokka") == {SID}
    assert _found("zanzibar_quokka") == set()


# Filled behind: the thread of a connection of its own, as `make run` and the commands do.


@pytest.fixture
def words_behind(settings):
    """Words filled by the thread; the connections attach the words file read-only."""
    from django.db import connections

    connections.close_all()
    settings.SEARCH_WORDS_BEHIND = True
    yield
    connections.close_all()


def _words_files_check(database: str) -> tuple[int, int]:
    """(rows of the word index, its up_to), read by a connection of the test's own after
    FTS5's own check of the index's structure."""
    import sqlite3

    from sessions_app.services.searching.words import words_path

    db = sqlite3.connect(words_path(database), isolation_level=None)
    try:
        db.execute("INSERT INTO search_fts(search_fts) VALUES ('integrity-check')")
        rows = db.execute("SELECT COUNT(*) FROM search_fts").fetchone()[0]
        up_to = db.execute("SELECT up_to FROM filled").fetchone()[0]
    finally:
        db.close()
    return rows, up_to


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's word index only")
def test_behind_a_thread_fills_the_words_and_the_pass_waits_for_it(
    words_behind, corpus: Path, corpus_roots: list[Path]
) -> None:
    from django.db import OperationalError

    sessions_import(roots=corpus_roots)
    report = search_refresh()

    assert not report.errors, report.errors
    assert words_waiting() == 0
    texts = SearchText.objects.count()
    assert _words_files_check(connection.settings_dict["NAME"]) == (
        texts,
        SearchText.objects.order_by("-pk").values_list("pk", flat=True).first(),
    )
    assert _found("subtract function"), "the fixture corpus's words are found"
    with pytest.raises(OperationalError, match="readonly"), connection.cursor() as cursor:
        cursor.execute("UPDATE words.filled SET up_to = 0")  # the pages cannot write it


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's word index only")
def test_behind_deleted_texts_lose_their_words_and_a_stranger_file_is_refilled(
    words_behind, tmp_path: Path
) -> None:
    root, path = _session_file(tmp_path, "zanzibar_quokka")
    sessions_import(roots=[root])
    search_refresh()
    path.write_bytes(path.read_bytes().replace(b"zanzibar", b"xylophones"))
    sessions_import(roots=[root])
    search_refresh()

    assert _found("xylophones_quokka") == {SID}
    assert _found("zanzibar_quokka") == set()
    assert _words_files_check(connection.settings_dict["NAME"])[0] == SearchText.objects.count()

    # The words file of another database (the main file put back from elsewhere): emptied
    # and filled again from this one's texts.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE search_words SET token = 'another database'")
    search_refresh()
    assert _found("xylophones_quokka") == {SID}
    assert _words_files_check(connection.settings_dict["NAME"])[0] == SearchText.objects.count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's word index only")
def test_behind_a_words_file_deleted_is_made_and_filled_again(words_behind, tmp_path: Path) -> None:
    from django.db import connections

    from sessions_app.services.searching.words import words_files

    root, _ = _session_file(tmp_path, "zanzibar_quokka")
    sessions_import(roots=[root])
    search_refresh()
    database = connection.settings_dict["NAME"]
    connections.close_all()
    for path in words_files(database):
        path.unlink()

    assert _found("zanzibar_quokka") == set(), "behind until the pass"
    search_refresh()
    assert _found("zanzibar_quokka") == {SID}


def test_the_search_page_says_how_many_texts_are_not_searchable_yet(client, tmp_path: Path) -> None:
    root, _ = _session_file(tmp_path, "zanzibar_quokka")
    sessions_import(roots=[root])  # texts stored, their words not yet in (SQLite)

    html = client.get("/search/", {"q": "zanzibar_quokka"}).content.decode()
    if connection.vendor == "sqlite":
        assert "2 texts imported a moment ago are not searchable yet" in html
    else:
        assert "not searchable yet" not in html
    search_refresh()
    html = client.get("/search/", {"q": "zanzibar_quokka"}).content.decode()
    assert "not searchable yet" not in html
    assert 'id="search-results"' in html and "zanzibar" in html


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's word index only")
def test_a_new_words_file_has_large_pages() -> None:
    """Fewer, larger writes for FTS5's merges (services.searching.words.PAGE_SIZE); the main
    file keeps SQLite's own."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA words.page_size")
        assert cursor.fetchone()[0] == 16_384
        cursor.execute("PRAGMA main.page_size")
        assert cursor.fetchone()[0] == 4_096
