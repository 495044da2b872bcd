"""Live transcript pages: the tail of a page at a session's end follows the file as it grows.

The page polls `/sessions/<id>/live/` with the lines it has seen; while nothing
changed that costs one small query and answers 204.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, jsonl, make_session, user_record

pytestmark = pytest.mark.django_db


def live_url(page: str) -> str:
    found = re.search(r'id="live-tail"[^>]*hx-get="([^"]+)"', page)
    assert found, "the page has no live tail"
    return found.group(1).replace("&amp;", "&")


def append_turn(path: Path, records: list[dict], prompt: str, reply: str) -> None:
    sid = records[0]["sessionId"]
    user = user_record(prompt, sid=sid, parent=records[-1]["uuid"])
    answer = assistant_record(reply, sid=sid, parent=user["uuid"])
    records += [user, answer]
    with path.open("ab") as f:
        f.write(jsonl([user, answer]))


@pytest.fixture
def grown(tmp_path: Path) -> tuple[Path, list[dict], Path]:
    root = tmp_path / "root"
    path, records = make_session(root, 3)
    sessions_import(roots=[root])
    return path, records, root


def test_an_unchanged_session_costs_one_small_query(
    client: Client, grown, django_assert_num_queries
) -> None:
    _, records, _ = grown
    page = client.get(f"/sessions/{records[0]['sessionId']}/").content.decode()
    url = live_url(page)
    with django_assert_num_queries(1):
        response = client.get(url)
    assert response.status_code == 204 and response.content == b""


def test_new_records_come_as_the_last_turn_again_and_the_turns_after_it(
    client: Client, grown
) -> None:
    path, records, root = grown
    sid = records[0]["sessionId"]
    url = live_url(client.get(f"/sessions/{sid}/").content.decode())
    assert "after=2" in url  # the page's tail starts at turn 3
    append_turn(path, records, "prompt 4", "answer 4")
    sessions_import(roots=[root])

    response = client.get(url, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    # Turn 3 again (the tail is replaced whole), turn 4, and a new tail at turn 4.
    assert body.count('<article class="turn" id="turn-3"') == 1
    assert 'id="turn-4"' in body and "prompt 4" in body and "answer 4" in body
    assert "prompt 2" not in body
    assert "after=3" in live_url(body) and "lines=8" in live_url(body)
    # The header's counts come along out of band.
    assert re.search(r'<dd id="session-counts" hx-swap-oob="true">4 · 8 records', body)
    # Nothing new since: 204 again.
    assert client.get(live_url(body)).status_code == 204


def test_a_session_that_got_shorter_asks_the_page_to_reload(client: Client, grown) -> None:
    path, records, root = grown
    sid = records[0]["sessionId"]
    url = live_url(client.get(f"/sessions/{sid}/").content.decode())
    path.write_bytes(jsonl(records[:2]))
    sessions_import(roots=[root])
    response = client.get(url)
    assert response.status_code == 204 and response["HX-Refresh"] == "true"


def test_only_a_page_at_the_sessions_end_follows_it(client: Client, tmp_path: Path) -> None:
    root = tmp_path / "root"
    _, records = make_session(root, 60)
    sessions_import(roots=[root])
    sid = records[0]["sessionId"]
    first = client.get(f"/sessions/{sid}/").content.decode()
    assert 'id="live-tail"' not in first  # more turns follow: no live tail yet
    pages = re.findall(r'hx-get="([^"]*after=\d+[^"]*)" hx-trigger="revealed"', first)
    assert pages
    url = pages[0].replace("&amp;", "&")
    while True:
        part = client.get(url, HTTP_HX_REQUEST="true").content.decode()
        more = re.findall(r'hx-get="([^"]*after=\d+[^"]*)" hx-trigger="revealed"', part)
        if not more:
            break
        url = more[0].replace("&amp;", "&")
    assert "after=59" in live_url(part)


def test_an_unknown_session_is_404(client: Client, db: None) -> None:
    response = client.get("/sessions/00000000-0000-4000-8000-000000000000/live/?lines=1")
    assert response.status_code == 404


def poll_url(page: str, list_id: str) -> str:
    found = re.search(rf'id="{list_id}" hx-get="([^"]+)" hx-trigger="every 3s"', page)
    assert found, f"the page's {list_id} does not poll"
    return found.group(1).replace("&amp;", "&")


def test_the_lists_mark_live_sessions_and_follow_new_imports(
    client: Client, grown, django_assert_max_num_queries
) -> None:
    path, records, root = grown
    sid = records[0]["sessionId"]
    session = Session.objects.get(session_id=sid)
    project_page = client.get(f"/projects/{session.project_id}/?sort=turns").content.decode()
    assert "badge live" not in project_page  # written in 2026-01: not live
    projects = poll_url(client.get("/").content.decode(), "project-list")
    sessions = poll_url(project_page, "session-list")
    assert "sort=turns" in sessions  # the poll keeps the list's own query
    with django_assert_max_num_queries(2):
        assert client.get(sessions, HTTP_HX_REQUEST="true").status_code == 204
    with django_assert_max_num_queries(1):
        assert client.get(projects, HTTP_HX_REQUEST="true").status_code == 204

    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    user = user_record("prompt 4", sid=sid, parent=records[-1]["uuid"], timestamp=now)
    with path.open("ab") as f:
        f.write(jsonl([user]))
    sessions_import(roots=[root])
    fresh = client.get(sessions, HTTP_HX_REQUEST="true").content.decode()
    assert 'class="badge live"' in fresh and '<td class="num">4</td>' in fresh
    listed = client.get(projects, HTTP_HX_REQUEST="true").content.decode()
    assert 'class="badge live"' in listed
    # The next poll carries the new stamp: nothing changed since, so 204 again.
    assert client.get(poll_url(fresh, "session-list"), HTTP_HX_REQUEST="true").status_code == 204
