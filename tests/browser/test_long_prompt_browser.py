"""A long prompt in any script is sent from the run form; a refused one stays in the box, with why."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from sessions_app.models import Run, Session
from sessions_app.services.importing import sessions_import
from tests.factories import make_session

# 30,000 CJK characters: 90 KB of UTF-8, 270 KB form-encoded.
CJK_PROMPT = "".join(chr(0x4E00 + i % 20_000) for i in range(30_000))


@pytest.fixture
def session(tmp_path: Path, transactional_db: None, settings) -> Session:
    """A Claude session whose folder is on this machine; runs start `true`, which ends at once."""
    root = tmp_path / "root"
    _, records = make_session(root, 2)
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    settings.RUN_COMMANDS = {"claude": "true"}
    sessions_import(roots=[root])
    found = Session.objects.get(session_id=records[0]["sessionId"])
    found.cwd = str(tmp_path)
    found.save(update_fields=["cwd"])
    return found


def type_prompt(page: Page, text: str) -> None:
    box = page.locator("#run-prompt")
    box.fill(text)
    expect(box).to_have_value(text)


def test_a_30000_character_cjk_prompt_is_sent(page: Page, live_server, session: Session) -> None:
    page.goto(f"{live_server.url}/sessions/{session.session_id}/")
    type_prompt(page, CJK_PROMPT)
    page.locator("#run-send").click()
    expect(page.locator("#run-status")).to_contain_text("Run ", timeout=20_000)
    assert Run.objects.get().prompt == CJK_PROMPT


def test_a_prompt_too_large_to_send_stays_in_the_box_with_why(
    page: Page, live_server, session: Session, settings
) -> None:
    # The server's byte limit refuses the body before any view reads it (Django's 413).
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    page.goto(f"{live_server.url}/sessions/{session.session_id}/")
    type_prompt(page, CJK_PROMPT)
    page.locator("#run-send").click()
    expect(page.locator("#run-refusal")).to_contain_text("larger than", timeout=20_000)
    expect(page.locator("#run-prompt")).to_have_value(CJK_PROMPT)
    assert not Run.objects.exists()


def test_a_prompt_over_the_character_limit_is_refused_and_kept(
    page: Page, live_server, session: Session
) -> None:
    page.goto(f"{live_server.url}/sessions/{session.session_id}/")
    # Pasted past the box's own limit (a script can), the server refuses it.
    page.locator("#run-prompt").evaluate("box => box.removeAttribute('maxlength')")
    typed = "語" * 100_001
    type_prompt(page, typed)
    page.locator("#run-send").click()
    expect(page.locator("#run-panel .action-error").first).to_contain_text(
        "over 100,000 characters", timeout=20_000
    )
    expect(page.locator("#run-prompt")).to_have_value(typed)
    assert not Run.objects.exists()
