"""The pages in a real browser: open, expand, scroll, follow lineage, stay inert."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from tests.factories import assistant_record, user_record, write_evil_session
from tests.test_turn_cards import Turns

from .conftest import shot

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
BIGREPO_ID = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"


@pytest.fixture
def fail_on_dialog(page: Page) -> list[str]:
    seen: list[str] = []
    page.on("dialog", lambda d: (seen.append(d.message), d.dismiss()))
    return seen


def test_projects_sessions_and_transcript_pages(
    page: Page, live_server, session_root: Path
) -> None:
    page.set_viewport_size({"width": 1280, "height": 860})
    page.goto(live_server.url + "/")
    expect(page.locator("#project-list")).to_contain_text("/home/dev/code/webapp")
    page.fill("input[aria-label='Filter projects']", "webapp")
    expect(page.locator("#project-list .card")).to_have_count(1)
    page.fill("input[aria-label='Filter projects']", "")
    # 12 Claude and Qwen projects, and Codex's 3 (two recording folders and codexdemo).
    expect(page.locator("#project-list .card")).to_have_count(15)
    shot(page, "projects")

    source = Session.objects.get(path=str(session_root / WEBAPP))
    session_fork(session=source, turn=2)
    page.goto(f"{live_server.url}/projects/{source.project_id}/")
    expect(page.locator("table.sessions")).to_contain_text("subtract feature (Branch)")
    expect(page.locator("table.sessions")).to_contain_text("Branched from")
    shot(page, "sessions")

    page.goto(f"{live_server.url}/sessions/{source.session_id}/")
    expect(page.locator(".turn-no")).to_have_count(3)
    bash = page.locator("details.tool", has_text="Bash").first
    expect(bash.locator(".tool-body")).to_be_hidden()
    bash.locator("summary").click()
    expect(bash.locator(".tool-body")).to_be_visible()
    edit = page.locator("details.tool", has_text="Edit").first
    edit.locator("summary").click()
    expect(edit.locator("table")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "transcript")


def test_long_session_loads_more_turns_on_scroll(
    page: Page, live_server, session_root: Path
) -> None:
    page.goto(f"{live_server.url}/sessions/{BIGREPO_ID}/")
    expect(page.locator(".turn-no")).to_have_count(20)
    page.locator(".more").scroll_into_view_if_needed()
    expect(page.locator(".turn-no")).to_have_count(30)
    expect(page.locator("#prompt-30")).to_be_attached()


def test_lineage_link_leads_to_the_parent(page: Page, live_server, session_root: Path) -> None:
    source = Session.objects.get(path=str(session_root / WEBAPP))
    fork = session_fork(session=source, turn=1)
    page.goto(f"{live_server.url}/sessions/{fork.session_id}/lineage/")
    page.locator(f'#family-tree a.tree-title[href="/sessions/{source.session_id}/"]').click()
    expect(page).to_have_url(re.compile(f"/sessions/{source.session_id}/$"))
    expect(page.locator("h1")).to_have_text("subtract feature")


def test_script_and_javascript_links_in_a_transcript_run_nothing(
    page: Page, live_server, session_root: Path, fail_on_dialog: list[str]
) -> None:
    sid = write_evil_session(session_root / "evil")
    sessions_import(roots=[session_root / "evil"])
    page.goto(f"{live_server.url}/sessions/{sid}/")
    expect(page.locator(".prompt-text")).to_contain_text("<script>alert(1)</script>")
    link = page.locator(".assistant a", has_text="click me")
    if link.count():
        link.click()
    page.wait_for_load_state()
    assert fail_on_dialog == []
    assert page.evaluate("typeof window.alert") == "function"


def test_more_of_a_turn_draws_its_prompt_once(page: Page, live_server, session_root: Path) -> None:
    # The first page fills up inside turn 6, just before the local command typed in it.
    built = Turns()
    for n in range(1, 6):
        built.turn(n, 5_000)
    built.turn(6, 9_900, 9_900)
    built.add(user_record, "<command-name>/rate-limit-options</command-name>")
    built.add(user_record, "<local-command-stdout>Waiting for the limit</local-command-stdout>")
    built.add(assistant_record, "Carrying on with turn 6.")
    built.turn(7, 100)
    session = built.imported(session_root / "cli/claude")
    page.goto(f"{live_server.url}/sessions/{session.session_id}/")
    more = page.locator(".more a")
    expect(more).to_have_text("More of turn 6")
    more.scroll_into_view_if_needed()
    expect(page.locator("#prompt-7")).to_be_attached()
    expect(page.locator(".turn-continued, article.turn.continued")).to_have_count(1)
    expect(page.locator("article.turn.continued")).to_contain_text("rate-limit-options")
    assert page.locator("#prompt-6").count() == 1
    assert page.locator(".turn-no").count() == 7
    ids = page.eval_on_selector_all("[id]", "els => els.map(e => e.id)")
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
