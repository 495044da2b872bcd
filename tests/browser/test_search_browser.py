"""Search in a real browser: the box on every page, a result opened at its marked turn."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh
from tests.test_search_chunks import LONG_SID, WORD, long_turn_file

from .conftest import shot

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def test_type_in_the_search_box_open_a_result_land_on_the_marked_turn(
    page: Page, live_server, session_root: Path
) -> None:
    assert not search_refresh().errors
    page.set_viewport_size({"width": 1280, "height": 860})
    page.goto(live_server.url + "/")
    # "/" focuses the box from anywhere on the page.
    page.locator("body").press("/")
    expect(page.locator("#search-box")).to_be_focused()
    page.keyboard.type("nonexistent_dir")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_server.url}/search/?q=nonexistent_dir")
    results = page.locator("#search-results")
    expect(results).to_contain_text("subtract feature")
    expect(results.locator("mark").first).to_have_text("nonexistent_dir")
    expect(results.locator(".hit").first).to_contain_text("tool")
    shot(page, "search")

    # Ctrl+K focuses the page's own search field too.
    page.locator("h1").click()
    page.keyboard.press("Control+k")
    expect(page.locator("#search-query")).to_be_focused()

    results.locator(".hit-link", has_text="ERROR: file or directory not found").click()
    expect(page).to_have_url(
        f"{live_server.url}/sessions/{WEBAPP_ID}/?after=1&hl=nonexistent_dir#turn-2"
    )
    turn = page.locator("#turn-2")
    marked = turn.locator("mark.search-hit")
    expect(marked.first).to_have_text("nonexistent_dir")
    # The match sat in a closed tool output: it was opened, and the page scrolled to it.
    expect(marked.first).to_be_visible()
    expect(page.locator("mark.search-hit.current")).to_be_in_viewport()
    assert page.locator("mark.search-hit").count() >= 2  # the call and its output


def test_search_only_in_this_session_from_the_transcript(
    page: Page, live_server, session_root: Path
) -> None:
    assert not search_refresh().errors
    page.goto(f"{live_server.url}/sessions/{WEBAPP_ID}/")
    page.fill("#session-search input[name=q]", "add")
    page.locator("#session-search button").click()
    expect(page.locator("h1")).to_contain_text("Search in “subtract feature”")
    groups = page.locator(".search-group")
    expect(groups).to_have_count(1)
    expect(groups.first).to_contain_text("subtract feature")


@pytest.fixture
def long_turn_root(tmp_path: Path, transactional_db: None, settings) -> Path:
    """One session of one long turn (many chunks): WORD deep in it, and again near its end."""
    root = tmp_path / "long"
    long_turn_file(root, hits=(250, 390))
    settings.SESSION_ROOTS = [root]
    assert not sessions_import(roots=[root]).errors
    assert not search_refresh().errors
    return root


def _in_view(page: Page, mark: Locator) -> bool:
    """Whether the element's box lies within the window's height."""
    box = mark.bounding_box()
    height = page.evaluate("window.innerHeight")
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


def test_a_hit_deep_in_a_long_turn_opens_marked_and_in_view_and_later_chunks_are_marked(
    page: Page, live_server, long_turn_root: Path
) -> None:
    page.set_viewport_size({"width": 1280, "height": 860})
    page.goto(f"{live_server.url}/search/?q={WORD}")
    page.locator("#search-results .hit-link").first.click()
    expect(page).to_have_url(re.compile(rf"/sessions/{LONG_SID}/\?.*hl={WORD}"))
    current = page.locator("mark.search-hit.current")
    expect(current).to_have_text(WORD)
    assert _in_view(page, current), "the page scrolled to the marked hit"
    expect(page.locator("#turns")).not_to_contain_text("part 100 ")  # several chunks in
    # Scroll on: the chunk holding the second match, loaded on scroll, has it marked.
    last = page.locator("#turns p", has_text="part 390 ")
    deadline = time.monotonic() + 30
    while not last.count() and time.monotonic() < deadline:
        page.mouse.wheel(0, 20_000)
        page.wait_for_load_state("networkidle")
    marked = last.locator("mark.search-hit")
    expect(marked).to_have_text(WORD)
    marked.scroll_into_view_if_needed()
    assert _in_view(page, marked)
