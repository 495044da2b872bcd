"""A pasted screenshot is drawn in the transcript, loaded by URL under the site's CSP."""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import Page

from sessions_app.services.importing import sessions_import
from tests.corpus import FIXTURES, make_idle
from tests.facts import MADE_ROOT

SHOTS_ID = "2c1d3e4f-5061-4b72-8c83-a4b5c6d7e8f9"


def test_a_pasted_screenshot_is_displayed(
    page: Page, live_server, tmp_path: Path, transactional_db: None, settings
) -> None:
    root = tmp_path / "made"
    shutil.copytree(FIXTURES / MADE_ROOT, root)
    make_idle(root)
    settings.SESSION_ROOTS = [root]
    assert not sessions_import(roots=[root]).errors
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else None)
    page.goto(f"{live_server.url}/sessions/{SHOTS_ID}/")
    shot = page.locator("#prompt-1 img.inline-image")
    assert shot.get_attribute("src") == f"/sessions/{SHOTS_ID}/records/0/images/0"
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=shot.element_handle(), timeout=10_000
    )
    assert shot.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [320, 316]
    icon = page.locator("img.inline-image[alt^='image from Read']")
    # Inside the Read call, closed: a lazy image loads once its call is opened.
    icon.locator("xpath=ancestor::details[1]/summary").click()
    icon.scroll_into_view_if_needed()
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=icon.element_handle(), timeout=10_000
    )
    assert icon.evaluate("img => img.naturalWidth") == 24
    assert refused == []
