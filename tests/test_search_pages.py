"""Search a page at a time: the best sessions first, the next ones a page further (the page's
"More results", the API's `next_page`), every session found on exactly one page, in rank
order, and nothing lost between pages."""

from __future__ import annotations

import html
import re
import uuid
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.selectors import search as search_module
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .factories import assistant_record, jsonl, user_record

WORD = "plonkavore"
SESSIONS = 8
PER_PAGE = 3


@pytest.fixture
def found(db, tmp_path: Path, monkeypatch) -> list[str]:
    """SESSIONS sessions holding WORD, three a page; their ids in rank order (one page)."""
    folder = tmp_path / "-work-demo"
    folder.mkdir()
    for n in range(SESSIONS):
        sid = str(uuid.uuid4())
        prompt = user_record(f"{WORD} {'again ' * n}please", sid=sid)
        reply = assistant_record(f"done {WORD} {n}", sid=sid, parent=prompt["uuid"])
        (folder / f"{sid}.jsonl").write_bytes(jsonl([prompt, reply]))
    sessions_import(roots=[tmp_path])
    assert not search_refresh().errors
    everything = search(SearchQuery(WORD))
    monkeypatch.setattr(search_module, "SESSION_LIMIT", PER_PAGE)
    return [str(g.session.session_id) for g in everything.groups]


def _ids(page: int) -> tuple[list[str], int | None]:
    results = search(SearchQuery(WORD, page=page))
    assert results.sessions == SESSIONS
    return [str(g.session.session_id) for g in results.groups], results.next_page


def test_the_pages_hold_every_session_once_in_rank_order(found: list[str]) -> None:
    assert len(found) == SESSIONS
    pages, page = [], 1
    while True:
        ids, next_page = _ids(page)
        assert 0 < len(ids) <= PER_PAGE
        pages.append(ids)
        if next_page is None:
            break
        assert next_page == page + 1
        page = next_page
    assert [len(p) for p in pages] == [3, 3, 2]
    assert [sid for p in pages for sid in p] == found, "nothing lost, nothing twice"
    assert _ids(page + 1) == ([], None), "past the last page: no session, no next page"


def test_the_api_pages_through_every_session(client: Client, found: list[str], token: str) -> None:
    seen, page = [], 1
    while page is not None:
        answer = client.get(
            "/api/search", {"q": WORD, "page": page}, HTTP_AUTHORIZATION=f"Bearer {token}"
        ).json()
        assert answer["page"] == page
        assert answer["session_count"] == SESSIONS
        seen += [s["session_id"] for s in answer["sessions"]]
        assert all(s["hits"] and s["hits"][0]["snippet"] for s in answer["sessions"])
        page = answer["next_page"]
    assert seen == found


def test_more_results_opens_the_next_sessions(client: Client, found: list[str]) -> None:
    first = client.get("/search/", {"q": WORD, "agent": "claude"}).content.decode()
    more = re.search(r'<p class="more" id="search-more"><a href="([^"]+)" hx-get="([^"]+)"', first)
    assert more is not None and more.group(1) == more.group(2)
    url = html.unescape(more.group(1))
    assert "page=2" in url and "agent=claude" in url, "the next page keeps the filters"
    assert all(sid in first for sid in found[:PER_PAGE])
    assert not any(sid in first for sid in found[PER_PAGE:])
    assert f"in {SESSIONS} sessions (sessions 1 to {PER_PAGE} here)" in first

    # htmx: the next sessions alone, and the link to the ones after, in place of the link.
    part = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in part and 'id="search-form"' not in part
    assert all(sid in part for sid in found[PER_PAGE : 2 * PER_PAGE])
    assert not any(sid in part for sid in found[:PER_PAGE] + found[2 * PER_PAGE :])
    assert "page=3" in part

    # Without JavaScript the link is a whole page; the last one offers no more.
    last = client.get("/search/", {"q": WORD, "page": 3}).content.decode()
    assert 'id="search-form"' in last and 'id="search-more"' not in last
    assert all(sid in last for sid in found[2 * PER_PAGE :])


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", "99999", "\u0663"])
def test_a_bad_page_is_a_400_that_names_it(db, client: Client, token: str, value: str) -> None:
    page = client.get("/search/", {"q": WORD, "page": value})
    assert page.status_code == 400 and "page:" in page.content.decode()
    api = client.get(
        "/api/search", {"q": WORD, "page": value}, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert api.status_code == 400 and api.json()["error"].startswith("page:")
