"""Getting around: the recent sessions of every project, remembered filters, breadcrumbs, times."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from sessions_app.models import Project, Record, Session
from sessions_app.rendering.numbers import when, when_full
from sessions_app.services.branching import session_fork

pytestmark = pytest.mark.django_db

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
QWEN_ID = "6fbeb39a-1e79-43ef-995c-46eedd93e6fe"
HX = {"HTTP_HX_REQUEST": "true"}


def _ids_in_order(html: str) -> list[str]:
    return re.findall(r'id="recent-([0-9a-f-]{36})"', html)


def test_recent_sessions_span_every_project_newest_first_with_live_marked(
    client, imported: Path
) -> None:
    now = timezone.now()
    listed = Session.objects.filter(is_subagent=False).exclude(turn_count=0)
    for age, session in enumerate(listed.order_by("pk")):
        moment = now - timedelta(days=age + 1)  # a fork's activity counts from when it was made
        Session.objects.filter(pk=session.pk).update(updated_at=moment, made_at=moment)
    qwen = Session.objects.get(session_id=QWEN_ID)
    Session.objects.filter(pk=qwen.pk).update(updated_at=now)  # written just now: live

    html = client.get("/recent/").content.decode()

    ids = _ids_in_order(html)
    assert len(ids) == listed.count() and len({s.project_id for s in listed}) > 2
    expected = [str(s.session_id) for s in listed.order_by("-updated_at", "-id")]
    assert ids == expected and ids[0] == QWEN_ID
    row = html[html.index(f'id="recent-{QWEN_ID}"') :].split("</li>")[0]
    assert "badge live" in row and "Qwen Code" in row and "/home/dev/code/qwenproj" in row
    assert html.count("badge live") == 1
    empty = Session.objects.filter(is_subagent=False, turn_count=0).first()
    assert empty is None or str(empty.session_id) not in html  # nothing to resume there


def test_the_home_page_shows_the_newest_sessions_above_the_projects(client, imported: Path) -> None:
    html = client.get("/").content.decode()
    assert 'id="recent-title"' in html and 'href="/recent/"' in html
    assert html.index("Recent sessions") < html.index('class="card project-row')
    assert 1 <= len(_ids_in_order(html)) <= 8


def test_recent_sessions_filter_by_agent_and_text(client, imported: Path) -> None:
    html = client.get("/recent/?agent=qwen", **HX).content.decode()
    assert "<html" not in html and _ids_in_order(html) == [
        str(s.session_id)
        for s in Session.objects.filter(is_subagent=False, agent="qwen")
        .exclude(turn_count=0)
        .order_by("-updated_at", "-id")
    ]
    webapp = Session.objects.get(path=str(imported / WEBAPP))
    html = client.get("/recent/?q=webapp").content.decode()
    assert str(webapp.session_id) in _ids_in_order(html)
    assert QWEN_ID not in html


def test_a_list_remembers_its_last_filter_and_sort(client, imported: Path) -> None:
    project = Project.objects.get(folder__endswith="-home-dev-code-forks")
    url = f"/projects/{project.pk}/"
    assert client.get(url).status_code == 200  # nothing kept yet
    assert client.get(f"{url}?q=experiment&sort=turns", **HX).status_code == 200

    back = client.get(url)  # a bare visit: the link from the projects list
    assert back.status_code == 302 and back["Location"] == f"{url}?q=experiment&sort=turns"
    page = client.get(back["Location"]).content.decode()
    assert 'value="experiment"' in page and '<option value="turns" selected>' in page
    # Another list keeps its own; polls change nothing; choosing the defaults forgets.
    assert client.get("/recent/").status_code == 200
    client.get(f"{url}?q=other&sort=title&stamp=1:1", **HX)
    assert client.get(url)["Location"] == f"{url}?q=experiment&sort=turns"
    client.get(f"{url}?q=&sort=updated", **HX)
    assert client.get(url).status_code == 200
    client.get("/recent/?agent=qwen")
    assert client.get("/recent/")["Location"] == "/recent/?agent=qwen"
    client.get("/?q=qwenproj")
    assert client.get("/")["Location"] == "/?q=qwenproj"


def test_every_page_has_breadcrumbs_from_the_projects(client, imported: Path) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    fork = session_fork(session=source, turn=2)
    project = f'href="/projects/{source.project_id}/"'
    session = f'href="/sessions/{source.session_id}/"'
    line = Record.objects.filter(session=source, turn=2).order_by("line").first().line
    pages = {
        "/": [],
        "/recent/": [],
        "/search/?q=feature": [],
        "/usage/": [],
        f"/projects/{source.project_id}/": [],
        f"/sessions/{source.session_id}/": [project],
        f"/sessions/{source.session_id}/?after=1": [project, session],
        f"/sessions/{source.session_id}/lineage/": [project, session],
        f"/sessions/{source.session_id}/compare/{fork.session_id}/": [project, session],
        f"/sessions/{source.session_id}/records/{line}/output/": [project, session, "turn 2<"],
    }
    for url, links in pages.items():
        html = client.get(url).content.decode()
        crumbs = re.search(r'<nav class="crumbs" aria-label="Breadcrumb">(.*?)</nav>', html, re.S)
        assert crumbs, url
        first = '<span aria-current="page">Projects' if url == "/" else '<a href="/">Projects</a>'
        assert crumbs.group(1).startswith(first), url  # the page itself is no link
        for link in links:
            assert link in crumbs.group(1), (url, link)
        assert 'aria-current="page"' in crumbs.group(1), url


def test_times_are_relative_with_the_date_beside() -> None:
    moment = timezone.now() - timedelta(hours=3, minutes=5)
    short, full = str(when(moment)), str(when_full(moment))
    stamp = f"{moment:%Y-%m-%d %H:%M} UTC"
    assert ">3\xa0hours ago</time>" in short and f'title="{stamp}"' in short
    assert f">3\xa0hours ago · {stamp}</time>" in full
    assert when(None) == ""
    # Not "0 minutes ago": a session written seconds ago (or a clock a little ahead).
    for seconds in (0, 40, -30):
        assert ">just now</time>" in str(when(timezone.now() - timedelta(seconds=seconds)))


def test_ids_and_paths_have_copy_buttons(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    transcript = client.get(f"/sessions/{session.session_id}/").content.decode()
    for value in (str(session.session_id), session.cwd, session.path, session.git_branch):
        assert f'data-copy="{value}"' in transcript, value
    project = client.get(f"/projects/{session.project_id}/").content.decode()
    assert f'data-copy="{session.project.path}"' in project
