"""The words of files the dashboard writes (a fork, a rewind from the page) are searchable
at once, with the index filled behind by its thread: the dashboard's own writes kick the
filler as the importer's do, so the search page never says they wait for the next import."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connections

from sessions_app.models import SearchText, Session
from sessions_app.services.searching import search_refresh, words_waiting
from sessions_app.services.searching.words_filling import fillers_stop

from .test_search_words import _found

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
WORDS = "subtract function"


@pytest.fixture
def words_behind(settings: pytest.FixtureRequest) -> Iterator[None]:
    """Words (SQLite) or pieces (PostgreSQL) filled by the thread, as `make run` does."""
    connections.close_all()
    settings.SEARCH_WORDS_BEHIND = True  # type: ignore[attr-defined]
    yield
    fillers_stop()  # its connection closed: the test database can be dropped
    connections.close_all()


def _none_waiting(seconds: float = 20.0) -> int:
    """Polls until no stored text waits for the filler, or the deadline; what still waits."""
    deadline = time.monotonic() + seconds
    while (waiting := words_waiting()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return waiting


@pytest.mark.django_db(transaction=True)
def test_a_fork_and_a_rewind_made_on_the_page_are_searchable_at_once(
    words_behind: None, imported_committed: Path, client
) -> None:
    search_refresh()  # the import's texts are all in the index
    assert words_waiting() == 0
    before = {str(s.session_id) for s in Session.objects.all()}
    assert WEBAPP_ID in _found(WORDS)

    response = client.post(f"/sessions/{WEBAPP_ID}/fork/", {"turn": "1"})
    assert response.status_code in (200, 302), response.status_code
    assert len({str(s.session_id) for s in Session.objects.all()} - before) == 1

    assert _none_waiting() == 0
    assert WEBAPP_ID in _found(WORDS)
    html = client.get("/search/", {"q": WORDS}).content.decode()
    assert "not searchable yet" not in html

    texts = SearchText.objects.count()
    response = client.post(f"/sessions/{WEBAPP_ID}/rewind/", {"turn": "2", "confirm": "1"})
    assert response.status_code in (200, 302), response.status_code
    assert SearchText.objects.count() > texts, "the rewind stored texts of its own"
    # No import runs: only the dashboard's own kick can fill their words.
    assert _none_waiting() == 0
    assert "not searchable yet" not in client.get("/search/", {"q": WORDS}).content.decode()
