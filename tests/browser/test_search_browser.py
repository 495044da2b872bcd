"""Search in a real browser: the box on every page, a result opened at its marked turn."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.services.searching import search_refresh

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
