"""A first import on PostgreSQL builds the texts' trigram index whole at its end instead of
row by row (services.searching.texts_index): search finds the texts right after it, and
while the index is away; an import that adds little keeps the index; a pass stopped
without it leaves it to the next search pass, and no pass builds it while another runs
without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh, texts_index
from sessions_app.services.searching.words_filling import fillers_stop

from .factories import assistant_record, jsonl, user_record

SID = "7a1c9e20-3b4d-4f5e-8a6b-1c2d3e4f5a6b"
LONG = "quokka " * 50  # longer than a piece's overlap: looked up in the texts' own index


@pytest.fixture
def database(transactional_db):
    """Outside a test's transaction, as the import runs; the filling thread stopped after."""
    yield
    fillers_stop()


def _session_file(root: Path, sid: str, words: str) -> None:
    path = root / "-home-dev-bulk" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    prompt = user_record(f"please look at {words} {LONG}", sid=sid)
    reply = assistant_record(f"looked at {words}", sid=sid, parent=prompt["uuid"])
    path.write_bytes(jsonl([prompt, reply]))


def _found(term: str) -> set[str]:
    return {str(g.session.session_id) for g in search(SearchQuery(term)).groups}


def _index_oid() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)::oid", [texts_index.INDEX])
        return cursor.fetchone()[0]


def test_a_search_right_after_a_whole_import_finds_its_texts(
    database, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(texts_index, "BULK_MIN_BYTES", 0)  # this small corpus counts as big
    root = tmp_path / "projects"
    _session_file(root, SID, "zanzibar_wombat")
    before = _index_oid() if connection.vendor == "postgresql" else None

    sessions_import(roots=[root])

    if connection.vendor == "postgresql":
        after = _index_oid()
        assert after is not None, "built again before the import returned"
        assert after != before, "built whole, not kept up row by row"
    search_refresh()
    assert _found("zanzibar_wombat") == {SID}
    assert _found(LONG.strip()) == {SID}


pg_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's index")


@pg_only
def test_an_import_that_adds_little_keeps_the_index(database, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(texts_index, "BULK_MIN_BYTES", 0)
    root = tmp_path / "projects"
    _session_file(root, SID, "zanzibar_wombat " * 20)
    sessions_import(roots=[root])
    kept = _index_oid()

    # Fewer new bytes than the index already holds: the index is kept up as they go in.
    _session_file(root, "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e", "tiny_numbat")
    sessions_import(roots=[root])

    assert _index_oid() == kept
    search_refresh()
    assert _found("tiny_numbat") == {"0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"}


@pg_only
def test_search_finds_the_texts_while_the_index_is_away(database, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    _session_file(root, SID, "zanzibar_wombat")
    sessions_import(roots=[root])
    search_refresh()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {texts_index.INDEX}")  # as a pass without it, or a crash

    assert _found("zanzibar_wombat") == {SID}
    assert _found(LONG.strip()) == {SID}
    # The next search pass after a stopped one builds it.
    _session_file(root, "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e", "tiny_numbat")
    sessions_import(roots=[root])
    search_refresh()
    assert _index_oid() is not None


@pg_only
def test_no_pass_builds_the_index_while_another_runs_without_it(database) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {texts_index.INDEX}")
    other = connection.copy()  # another process's pass, without the index
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock_shared(%s)", [texts_index.LOCK_KEY])

        texts_index.texts_index_ensure()
        assert _index_oid() is None, "the pass without it builds it when it ends"

        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_shared(%s)", [texts_index.LOCK_KEY])
        texts_index.texts_index_ensure()
        assert _index_oid() is not None
    finally:
        other.close()
