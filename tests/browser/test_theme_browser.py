"""Dark mode: it follows the system's setting, and a toggle that is remembered overrides it."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import shot

LIGHT_BG, DARK_BG = "rgb(247, 248, 250)", "rgb(12, 17, 29)"
WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def background(page: Page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def test_dark_mode_follows_the_system_and_the_toggle_overrides_it(
    page: Page, live_server, session_root: Path
) -> None:
    page.emulate_media(color_scheme="light")
    page.goto(live_server.url + "/")
    assert background(page) == LIGHT_BG
    page.emulate_media(color_scheme="dark")
    assert background(page) == DARK_BG
    # A card and the text change with it (not only the page's background).
    card = page.locator("#project-list .card").first
    assert card.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(22, 27, 38)"
    toggle = page.locator("#theme-toggle")
    expect(toggle).to_have_text("Theme: system")
    toggle.click()  # dark
    expect(toggle).to_have_text("Theme: dark")
    toggle.click()  # light, although the system says dark
    expect(toggle).to_have_text("Theme: light")
    assert background(page) == LIGHT_BG
    page.goto(f"{live_server.url}/sessions/{WEBAPP_ID}/")  # remembered on the next page
    expect(page.locator("#theme-toggle")).to_have_text("Theme: light")
    assert background(page) == LIGHT_BG
    page.locator("#theme-toggle").click()  # back to following the system: dark
    expect(page.locator("#theme-toggle")).to_have_text("Theme: system")
    assert background(page) == DARK_BG
    code = page.locator("details.tool", has_text="Edit").first
    code.locator("summary").click()
    table = code.locator("table.diff")
    expect(table).to_be_visible()
    assert table.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(22, 27, 38)"
    page.set_viewport_size({"width": 1280, "height": 860})
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "transcript-dark")
