"""The import behind the pages: newest sessions first, and its progress on every page."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.models import F

from sessions_app.management.commands.import_sessions import _import_pass
from sessions_app.models import ImportStatus, SearchText, Session
from sessions_app.selectors.importing import import_progress
from sessions_app.services.discovery import SessionFile
from sessions_app.services.importing import sessions_import
from sessions_app.services.progress import ImportTracker

from .factories import make_session

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def _sessions(root: Path, n: int) -> list[Path]:
    paths = []
    for k in range(n):
        path, _ = make_session(root, 2, project=f"-work-p{k % 2}")
        # Oldest first on disk: file k was last written k minutes after the first.
        os.utime(path, ns=(1_700_000_000_000_000_000 + k * 60_000_000_000,) * 2)
        paths.append(path)
    return paths


def test_the_newest_session_is_imported_first(tmp_path: Path) -> None:
    paths = _sessions(tmp_path, 4)
    sessions_import(roots=[tmp_path])
    by_pk = list(Session.objects.order_by("pk").values_list("path", flat=True))
    assert by_pk == [str(p) for p in reversed(paths)]


def test_progress_is_shown_while_the_pass_runs(client, tmp_path: Path) -> None:
    _sessions(tmp_path, 3)
    seen: list[tuple[bool, str, int, int]] = []
    banners: list[str] = []

    def during(_source: SessionFile, _size: int) -> None:
        progress = import_progress()
        assert progress is not None
        seen.append((progress.running, progress.phase, progress.files_total, progress.bytes_total))
        banners.append(client.get("/import-status/", **HX).content.decode())

    tracker = ImportTracker()
    sessions_import(roots=[tmp_path], progress=during, tracker=tracker)
    total = sum(p.stat().st_size for p in tmp_path.rglob("*.jsonl"))
    assert seen[0] == (True, ImportStatus.RECORDS, 3, total)
    # The banner polls while the import runs, and says what it is doing.
    assert 'hx-trigger="every 2s"' in banners[0]
    assert "Importing your sessions, newest first" in banners[0]
    assert "of 3 files" in banners[0]
    tracker.end()
    idle = client.get("/import-status/", **HX).content.decode()
    assert idle.strip() == '<div id="import-status"></div>'


def test_the_poll_after_the_end_offers_a_reload(client, tmp_path: Path) -> None:
    _sessions(tmp_path, 1)
    call_command("import_sessions", "--root", str(tmp_path), "--no-progress")
    html = client.get("/import-status/?was=running", **HX).content.decode()
    assert "Every session is imported, searchable and counted" in html
    assert "hx-trigger" not in html  # polling stops


def test_search_and_usage_catching_up_are_shown(client) -> None:
    tracker = ImportTracker()
    tracker.begin([])
    tracker.catch_up(ImportStatus.SEARCH, 0, 40)
    html = client.get("/import-status/", **HX).content.decode()
    assert "Search is catching up: 0 of 40 sessions indexed" in html
    tracker.catch_up(ImportStatus.USAGE, 40, 40)
    html = client.get("/import-status/", **HX).content.decode()
    assert "Usage is being counted: 40 of 40 sessions" in html


def test_the_command_ends_whole(client, tmp_path: Path) -> None:
    _sessions(tmp_path, 2)
    assert client.get("/import-status.json").json() == {
        "whole": False,
        "running": False,
        "phase": None,
    }
    call_command("import_sessions", "--root", str(tmp_path), "--no-progress")
    state = client.get("/import-status.json").json()
    assert state["whole"] and state["phase"] == "idle"
    assert state["files"] == {"done": 2, "total": 2}
    # Every session is searchable and counted when the status says whole.
    assert not Session.objects.filter(search_lines__lt=F("line_count")).exists()


def test_the_watchers_pass_ends_whole(client, tmp_path: Path, transactional_db: None) -> None:
    _sessions(tmp_path, 2)
    assert _import_pass([tmp_path])
    state = client.get("/import-status.json").json()
    assert state["whole"] and state["files"] == {"done": 2, "total": 2}
    assert state["sessions_caught_up"]["done"] == state["sessions_caught_up"]["total"]


def test_a_pass_whose_process_died_is_not_shown_as_running(client) -> None:
    tracker = ImportTracker()
    tracker.begin([])
    ImportStatus.objects.update(updated_at="2000-01-01T00:00:00Z")
    progress = import_progress()
    assert progress is not None and not progress.running
    assert client.get("/import-status/", **HX).content.decode().strip() == (
        '<div id="import-status"></div>'
    )


def test_every_page_asks_for_the_banner(client) -> None:
    html = client.get("/").content.decode()
    assert 'hx-get="/import-status/" hx-trigger="load"' in html


def test_the_search_phase_says_what_it_waits_for(client, tmp_path: Path) -> None:
    """The import stores the texts, so the search pass has no session to catch up with, only
    words to add (SQLite): the banner says so, not "0 of 0 sessions indexed"."""
    from django.db import connection

    _sessions(tmp_path, 1)
    sessions_import(roots=[tmp_path])  # texts stored; tests fill their words in the pass
    tracker = ImportTracker()
    tracker.begin([])
    tracker.catch_up(ImportStatus.SEARCH, 0, 0)
    html = client.get("/import-status/", **HX).content.decode()
    assert "0 of 0" not in html
    if connection.vendor == "sqlite":
        texts = SearchText.objects.count()  # two turns: each prompt and reply
        assert texts == 4
        assert f"The words of {texts} texts are going into the search index" in html
        assert client.get("/import-status.json").json()["words_waiting"] == texts
    else:  # PostgreSQL finds a text as soon as it is stored
        assert "Search is catching up, so some results may be missing yet" in html
        assert client.get("/import-status.json").json()["words_waiting"] == 0


def test_the_home_page_says_the_import_runs_while_nothing_is_listed_yet(client) -> None:
    ImportTracker().begin([])  # the files are being looked for: none counted yet
    html = client.get("/").content.decode()
    assert "Your sessions are being imported" in html
    assert "No sessions found" not in html and "BRANCHBOARD_ROOTS" not in html
    banner = client.get("/import-status/", **HX).content.decode()
    assert "Looking for your session files" in banner and "0 of 0 files" not in banner


def test_a_pass_is_running_before_its_roots_are_looked_through(tmp_path: Path) -> None:
    """On a fresh data folder, looking through the roots is the first import's first
    second: the pages see the import running from its start, not "no sessions"."""
    _sessions(tmp_path, 1)
    seen: list[bool] = []

    def roots() -> Iterator[Path]:
        progress = import_progress()
        seen.append(progress is not None and progress.running)
        yield tmp_path

    sessions_import(roots=roots(), tracker=ImportTracker())
    assert seen == [True]


def test_the_home_page_before_any_import_says_none_has_run(client) -> None:
    html = client.get("/").content.decode()
    assert "No import has run yet" in html and "No sessions found" not in html
