"""The sessions page and the recent list page by a cursor: every session once, in order, each
page reading a bounded number of rows and counting none, whatever page it is."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Project, Session

pytestmark = pytest.mark.django_db

SESSIONS = 130
BASE = datetime(2026, 1, 1, tzinfo=UTC)
ROW = re.compile(r'id="(?:session|recent)-([0-9a-f-]{36})"')
NEXT = re.compile(r'<a href="([^"]+)"[^>]*rel="next"')
PREVIOUS = re.compile(r'<a href="([^"]+)"[^>]*rel="prev"')
HX = {"HTTP_HX_REQUEST": "true"}


def _activity(s: Session) -> datetime | None:
    if s.parent_id is None:
        return s.updated_at
    dates = [d for d in (s.updated_at, s.made_at) if d is not None]
    return max(dates) if dates else None


def _made(s: Session) -> datetime | None:
    return (s.made_at or s.started_at) if s.parent_id else s.started_at


# Each sort's key in Python, and whether it runs from the largest key down.
KEYS: dict[str, tuple[Callable[[Session], Any], bool]] = {
    "updated": (_activity, True),
    "made": (_made, True),
    "started": (lambda s: s.started_at, True),
    "turns": (lambda s: s.turn_count, True),
    "tokens": (lambda s: s.output_tokens, True),
    "title": (lambda s: s.title, False),
}


@pytest.fixture
def project() -> Project:
    """130 sessions with many equal keys and undated ones, some of them forks."""
    project = Project.objects.create(agent="claude", folder="/r/-work-many", root="/r", path="/w")
    rows = [
        Session(
            project=project,
            session_id=uuid.uuid4(),
            path=f"/r/-work-many/{n}.jsonl",
            agent="claude",
            title=f"session {n % 9}",
            turn_count=n % 7 + 1,
            output_tokens=n % 5 * 100,
            started_at=None if n % 6 == 0 else BASE + timedelta(hours=n % 11),
            updated_at=None if n % 8 == 0 else BASE + timedelta(minutes=n % 13),
        )
        for n in range(SESSIONS)
    ]
    Session.objects.bulk_create(rows)
    ids = list(Session.objects.filter(project=project).order_by("id").values_list("id", flat=True))
    for n, pk in enumerate(ids):
        made = None if n % 4 == 0 else BASE + timedelta(minutes=n % 17)
        parent = ids[0] if n % 3 == 1 else None
        Session.objects.filter(pk=pk).update(made_at=made, parent_id=parent)
    Project.objects.filter(pk=project.pk).update(session_count=SESSIONS)
    return project


def expected(sort: str, sessions: list[Session]) -> list[str]:
    """The list in order: key first (undated last), then the newest row (largest pk) first."""
    key, descending = KEYS[sort]
    newest_first = sorted(sessions, key=lambda s: s.pk, reverse=True)
    dated = sorted((s for s in newest_first if key(s) is not None), key=key, reverse=descending)
    undated = [s for s in newest_first if key(s) is None]
    return [str(s.session_id) for s in dated + undated]


def walk(client, url: str, link: re.Pattern, **headers: str) -> tuple[list[list[str]], str]:
    """The pages from `url` on, following `link`; and the URL of the last one."""
    pages = []
    while True:
        response = client.get(url, **headers)
        assert response.status_code == 200, (url, response.status_code)
        html = response.content.decode()
        pages.append(ROW.findall(html))
        found = link.search(html)
        if not found:
            return pages, url
        url = unescape(found.group(1))
        assert len(pages) <= SESSIONS, "the pager runs in a circle"


def sessions_of(project: Project) -> list[Session]:
    return list(Session.objects.filter(project=project))


@pytest.mark.parametrize("sort", list(KEYS))
def test_every_page_forward_and_back_holds_each_session_once_in_order(
    client, project: Project, sort: str
) -> None:
    want = expected(sort, sessions_of(project))
    assert len(set(want)) == SESSIONS
    forward, last = walk(client, f"/projects/{project.pk}/?sort={sort}&q=", NEXT)
    assert [len(p) for p in forward] == [50, 50, 30]
    assert [row for page in forward for row in page] == want
    backward, _ = walk(client, last, PREVIOUS)
    assert [row for page in reversed(backward) for row in page] == want
    assert backward[-1] == want[:50]  # back at the first page, which has no "previous"


@pytest.mark.parametrize("sort", ["updated", "made", "turns"])
def test_htmx_pages_are_fragments_in_the_same_order(client, project: Project, sort: str) -> None:
    forward, _ = walk(client, f"/projects/{project.pk}/?sort={sort}&q=", NEXT, **HX)
    assert [row for page in forward for row in page] == expected(sort, sessions_of(project))
    html = client.get(f"/projects/{project.pk}/?sort={sort}&q=", **HX).content.decode()
    assert "<html" not in html and 'hx-get="/projects/' in html


@pytest.mark.parametrize("sort", ["updated", "started", "tokens"])
def test_the_recent_list_pages_the_same_way(client, project: Project, sort: str) -> None:
    forward, last = walk(client, f"/recent/?sort={sort}&q=&agent=", NEXT)
    want = expected(sort, sessions_of(project))
    assert [row for page in forward for row in page] == want
    backward, _ = walk(client, last, PREVIOUS)
    assert [row for page in reversed(backward) for row in page] == want


def test_the_filter_and_sort_carry_over_to_the_next_page(client, project: Project) -> None:
    matching = [s for s in sessions_of(project) if s.title == "session 3"]
    pages, _ = walk(client, f"/projects/{project.pk}/?sort=turns&q=session+3", NEXT)
    assert sum(map(len, pages)) == len(matching) == 15
    assert len(pages) == 1  # 15 rows: no pager
    next_url = NEXT.search(
        client.get(f"/projects/{project.pk}/?sort=title&q=session").content.decode()
    )
    assert "sort=title" in unescape(next_url.group(1)) and "q=session" in unescape(
        next_url.group(1)
    )
    # A bare visit goes back to the remembered sort; a pager link is never sent elsewhere.
    back = client.get(f"/projects/{project.pk}/")["Location"]
    assert "sort=title" in back and "q=session" in back
    assert client.get(unescape(next_url.group(1))).status_code == 200


@pytest.mark.parametrize("sort", list(KEYS))
def test_the_last_page_reads_one_page_of_rows_and_counts_no_sessions(
    client, project: Project, sort: str
) -> None:
    _, last = walk(client, f"/projects/{project.pk}/?sort={sort}&q=", NEXT)
    table = Session._meta.db_table
    with CaptureQueriesContext(connection) as queries:
        assert client.get(last).status_code == 200
    on_sessions = [q["sql"] for q in queries.captured_queries if f'FROM "{table}"' in q["sql"]]
    listing = [sql for sql in on_sessions if "ORDER BY" in sql]
    assert listing, on_sessions
    for sql in listing:  # each cut at one page and one row, reading from the cursor on
        assert re.search(r"LIMIT (\d+)", sql) and int(re.search(r"LIMIT (\d+)", sql)[1]) <= 51
        assert "OFFSET" not in sql, sql
    counts = [sql for sql in on_sessions if "COUNT(" in sql]
    # Only the small counts beside the list: the page's branches, sessions without a
    # prompt, hidden backups; none of the list itself (the pager counted it before).
    narrow = ('"parent_id" IN (', '"turn_count" = 0', "rewind_backup")
    assert all(any(word in sql for word in narrow) for sql in counts), counts


def test_old_page_links_still_answer(client, project: Project) -> None:
    want = expected("turns", sessions_of(project))
    html = client.get(f"/projects/{project.pk}/?page=2&sort=turns&q=").content.decode()
    assert ROW.findall(html) == want[50:100]
    nxt = unescape(NEXT.search(html).group(1))
    assert ROW.findall(client.get(nxt).content.decode()) == want[100:]
    for far in ("999999", "0", "-1", "abc"):
        html = client.get(f"/projects/{project.pk}/?page={far}&sort=turns&q=").content.decode()
        assert ROW.findall(html) == want[:50]


@pytest.mark.parametrize(
    "cursor", ["x", "1:", "1:notadate", "99999999:2026-01-01T00:00:00", "1:\x00"]
)
def test_a_bad_cursor_shows_the_first_page(client, project: Project, cursor: str) -> None:
    want = expected("updated", sessions_of(project))
    for name in ("after", "before"):
        response = client.get(
            f"/projects/{project.pk}/", {"sort": "updated", "q": "", name: cursor}
        )
        assert response.status_code == 200
        rows = ROW.findall(response.content.decode())
        assert rows == want[:50] or set(rows) <= set(want)  # a valid far cursor: some page
