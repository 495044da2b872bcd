"""Keys on the transcript: j/k move between turns, o opens a turn's tools, b branches, ? helps."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.models import Session

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def test_keyboard_navigation_on_a_transcript(page: Page, live_server, session_root: Path) -> None:
    page.set_viewport_size({"width": 1280, "height": 700})
    page.goto(f"{live_server.url}/sessions/{WEBAPP_ID}/")
    page.keyboard.press("j")
    expect(page.locator("#turn-1")).to_have_class("turn focused")
    page.keyboard.press("j")
    expect(page.locator("#turn-2")).to_have_class("turn focused")
    expect(page.locator("#turn-1")).not_to_have_class("turn focused")
    expect(page.locator("#turn-2")).to_be_in_viewport()
    page.keyboard.press("k")
    expect(page.locator("#turn-1")).to_have_class("turn focused")
    page.keyboard.press("j")
    bash = page.locator("#turn-2 details.tool").first
    expect(bash.locator(".tool-body")).to_be_hidden()
    page.keyboard.press("o")
    expect(bash.locator(".tool-body")).to_be_visible()
    page.keyboard.press("o")
    expect(bash.locator(".tool-body")).to_be_hidden()
    page.keyboard.press("Enter")  # the focused turn itself: the same as o
    expect(bash.locator(".tool-body")).to_be_visible()
    # Typing in a field is typing, not a key command.
    page.locator("#session-search input[name=q]").fill("")
    page.locator("#session-search input[name=q]").press("j")
    expect(page.locator("#turn-2")).to_have_class("turn focused")
    page.locator("#session-search input[name=q]").press("Escape")
    page.locator("h1").click()
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    expect(page.locator("#keys-help")).to_contain_text("branch from the turn")
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).to_be_hidden()
    # b: branch from the focused turn (still turn 2), which has the focus back.
    expect(page.locator("#turn-2")).to_have_class("turn focused")
    expect(page.locator("#turn-2")).to_be_focused()
    before = Session.objects.count()
    page.keyboard.press("b")
    # The fork is written, fsynced and read back before the page moves to it.
    expect(page.locator("h1")).to_contain_text("subtract feature (Branch)", timeout=30_000)
    assert Session.objects.count() == before + 1
    fork = Session.objects.get(title="subtract feature (Branch)")
    assert fork.fork_turn == 2 and fork.turn_count == 2
