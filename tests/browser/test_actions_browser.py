"""Branch, branch from here, edit & fork, rewind and undo, clicked in a real browser."""

from __future__ import annotations

import hashlib
import re
import stat
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from sessions_app.models import Session
from tests.reading import analyse_file

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
QWEN = "cli/qwen/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def new_session_from_url(page: Page) -> Session:
    match = re.search(f"/sessions/({UUID})/", page.url)
    assert match, page.url
    return Session.objects.get(session_id=match.group(1))


def check_new_file(session: Session, turns: int) -> None:
    path = Path(session.path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert analyse_file(path)[1].turn_count == turns


def test_branch_and_branch_from_here(page: Page, live_server, session_root: Path) -> None:
    source_path = session_root / WEBAPP
    before = digest(source_path)
    source = Session.objects.get(path=str(source_path))
    page.goto(f"{live_server.url}/sessions/{source.session_id}/")
    page.click("#branch-session")
    expect(page).not_to_have_url(re.compile(f"/sessions/{source.session_id}/"))
    expect(page.locator(".message")).to_contain_text("subtract feature (Branch)")
    expect(page.locator(".message")).to_contain_text("claude --resume")
    branch = new_session_from_url(page)
    check_new_file(branch, 3)
    expect(page.locator(".badges")).to_contain_text("Branched from")

    page.go_back()
    expect(page).to_have_url(re.compile(f"/sessions/{source.session_id}/"))
    page.locator("#prompt-2").locator("xpath=..").locator("button.branch-here").click()
    expect(page.locator("h1")).to_have_text("subtract feature (Branch 2)")
    check_new_file(new_session_from_url(page), 2)
    assert digest(source_path) == before


def test_double_click_gives_two_distinct_titles(
    page: Page, live_server, session_root: Path
) -> None:
    source = Session.objects.get(path=str(session_root / QWEN))
    before = digest(Path(source.path))
    page.goto(f"{live_server.url}/sessions/{source.session_id}/")
    # Two clicks before the first answer arrives (faster than any double click).
    page.evaluate(
        "() => { const b = document.querySelector('#turn-2 button.branch-here'); b.click(); b.click(); }"
    )
    titles: list[str] = []
    for _ in range(100):  # poll, with a deadline, until both forks exist
        titles = sorted(Session.objects.filter(parent=source).values_list("title", flat=True))
        if len(titles) == 2:
            break
        page.wait_for_timeout(100)
    assert titles == ["list files (Branch 2)", "list files (Branch)"]
    for child in Session.objects.filter(parent=source):
        check_new_file(child, 2)
    assert digest(Path(source.path)) == before


def test_edit_and_fork_hands_back_the_prompt(page: Page, live_server, session_root: Path) -> None:
    source = Session.objects.get(path=str(session_root / WEBAPP))
    page.goto(f"{live_server.url}/sessions/{source.session_id}/")
    page.locator("#turn-3 button.edit-fork").click()
    expect(page.locator("#edit-panel")).to_be_visible()
    fork = new_session_from_url(page)
    check_new_file(fork, 2)
    prompt = page.locator("#edit-prompt").input_value()
    assert prompt and prompt in Path(source.path).read_text()
    expect(page.locator("#edit-panel")).to_contain_text(f"claude --resume {fork.session_id}")


def test_rewind_then_undo(page: Page, live_server, session_root: Path) -> None:
    path = session_root / WEBAPP
    original = path.read_bytes()
    source = Session.objects.get(path=str(path))
    page.goto(f"{live_server.url}/sessions/{source.session_id}/")
    messages: list[str] = []
    page.on("dialog", lambda d: (messages.append(d.message), d.accept()))
    page.locator("#turn-2 button.rewind-here").click()
    expect(page.locator(".message")).to_contain_text("Rewound to turn 2")
    assert "2 turns (2–3) will leave this session" in messages[0]
    expect(page.locator(".turn-no")).to_have_count(1)
    rewound = Session.objects.get(pk=source.pk)
    backup = Session.objects.get(session_id=rewound.rewind_undo["backup_id"])
    assert backup.kind == "rewind_backup" and backup.turn_count == 3
    page.click("#undo-rewind")
    expect(page.locator(".message")).to_contain_text("Rewind undone")
    expect(page.locator(".turn-no")).to_have_count(3)
    assert path.read_bytes() == original


def test_rewind_refused_when_the_file_changed_after_the_page_loaded(
    page: Page, live_server, session_root: Path
) -> None:
    path = session_root / WEBAPP
    source = Session.objects.get(path=str(path))
    page.goto(f"{live_server.url}/sessions/{source.session_id}/")
    with path.open("ab") as f:
        f.write(b'{"type":"mode","mode":"default"}\n')
    changed = path.read_bytes()
    page.on("dialog", lambda d: d.accept())
    page.locator("#turn-2 button.rewind-here").click()
    expect(page.locator("#turn-error-2")).to_contain_text("changed on disk")
    assert path.read_bytes() == changed
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_qwen_rewind_then_undo_draws_each_turn_once(
    page: Page, live_server, session_root: Path
) -> None:
    source = Session.objects.get(path=str(session_root / QWEN))
    page.goto(f"{live_server.url}/sessions/{source.session_id}/")
    page.on("dialog", lambda d: d.accept())
    page.locator("#turn-2 button.rewind-here").click()
    expect(page.locator(".message")).to_contain_text("Rewound to turn 2")
    expect(page.locator("article.turn")).to_have_count(1)
    page.click("#undo-rewind")
    expect(page.locator(".message")).to_contain_text("Rewind undone")
    for _ in range(2):  # as the undo left it, then reloaded
        expect(page.locator("article.turn")).to_have_count(3)
        expect(page.locator(".turn-actions")).to_have_count(3)
        expect(page.locator("#session-counts")).to_contain_text("3 ·")
        ids = page.eval_on_selector_all("[id]", "els => els.map(e => e.id)")
        assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
        page.reload()


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_branch_says_what_it_made_where_it_lands_with_a_link_back(
    page: Page, live_server, session_root: Path, width: int, scheme: str
) -> None:
    page.set_viewport_size({"width": width, "height": 700})
    page.emulate_media(color_scheme=scheme)
    source = Session.objects.get(path=str(session_root / WEBAPP))
    source_url = f"{live_server.url}/sessions/{source.session_id}/"
    for click in ("#branch-session", "#turn-2 button.branch-here"):
        page.goto(source_url)
        page.locator(click).click()
        expect(page).not_to_have_url(re.compile(f"/sessions/{source.session_id}/"))
        note = page.locator("#landing .message")
        # Seen where the page lands (the run box), not only at the top of the transcript.
        expect(note).to_be_in_viewport()
        expect(note).to_contain_text("Created “subtract feature (Branch")
        link = note.locator("a.source-link")
        expect(link).to_be_visible()
        colours = link.evaluate(
            "a => [getComputedStyle(a).color,"
            " getComputedStyle(a.closest('.message')).backgroundColor]"
        )
        assert colours[0] != colours[1], colours
        link.click()
        expect(page).to_have_url(source_url)
