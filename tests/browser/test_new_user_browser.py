"""What a new user tripped on in the browser (issue 42, item 16): j past the last loaded
turn, a long cwd on a phone, and dark mode's form controls."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from tests.factories import assistant_record, jsonl, user_record

LONG_CWD = "/Users/someone/Documents/GitHub/a_rather_long_project_folder_name/with_a_nested_package"


def _session(root: Path, turns: int, *, cwd: str = LONG_CWD) -> Session:
    """A Claude session of `turns` prompt/answer pairs in `cwd`, imported."""
    sid = "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
    records, parent = [], None
    for n in range(turns):
        user = user_record(
            f"prompt {n + 1}",
            sid=sid,
            parent=parent,
            cwd=cwd,
            timestamp=f"2026-01-01T00:{n:02d}:00.000Z",
        )
        answer = assistant_record(
            f"answer {n + 1}",
            sid=sid,
            parent=user["uuid"],
            cwd=cwd,
            timestamp=f"2026-01-01T00:{n:02d}:30.000Z",
        )
        records += [user, answer]
        parent = answer["uuid"]
    folder = root / "-home-someone-work"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl(records))
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    return Session.objects.get(session_id=sid)


def test_j_at_the_last_loaded_turn_loads_the_next_chunk(
    page: Page, live_server, tmp_path: Path, transactional_db: None, settings
) -> None:
    settings.SESSION_ROOTS = [tmp_path / "root"]
    session = _session(tmp_path / "root", 45)
    page.set_viewport_size({"width": 1280, "height": 700})
    page.goto(f"{live_server.url}/sessions/{session.session_id}/")
    expect(page.locator("#turn-20")).to_be_attached()
    expect(page.locator("#turn-21")).not_to_be_attached()  # the first chunk only
    # The reader is on the last loaded turn (without scrolling the chunk's link into view).
    page.evaluate("document.getElementById('turn-20').classList.add('focused')")
    page.locator("h1").click()
    page.keyboard.press("j")
    expect(page.locator("#turn-21")).to_have_class("turn focused")
    expect(page.locator("#turn-21")).to_be_in_viewport()
    assert page.locator("#turn-21").count() == 1  # loaded once, not twice


def test_a_long_cwd_wraps_on_a_phone(
    page: Page, live_server, tmp_path: Path, transactional_db: None, settings
) -> None:
    settings.SESSION_ROOTS = [tmp_path / "root"]
    session = _session(tmp_path / "root", 2)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/sessions/{session.session_id}/")
    expect(page.locator(".facts code", has_text="nested_package")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_dark_mode_draws_selects_and_date_inputs_dark(
    page: Page, live_server, tmp_path: Path, transactional_db: None, settings
) -> None:
    settings.SESSION_ROOTS = [tmp_path / "root"]
    _session(tmp_path / "root", 2)
    page.emulate_media(color_scheme="dark")
    page.goto(f"{live_server.url}/search/?q=prompt")
    for control in ("#search-since", "select"):
        field = page.locator(control).first
        expect(field).to_be_visible()
        scheme = field.evaluate("e => getComputedStyle(e).colorScheme")
        background = field.evaluate("e => getComputedStyle(e).backgroundColor")
        assert scheme == "dark", (control, scheme)
        assert background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"), (control, background)
