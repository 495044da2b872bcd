"""A hub's lists in a real browser: two machines' sessions, each marked with its owner and
machine, narrowed to one and back; the README's picture of a hub."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.services.hub.namespaces import hub_roots
from sessions_app.services.importing import sessions_import
from tests.corpus import FIXTURES, make_idle

from .conftest import as_owner, shot

# What each machine pushed, as a hub keeps it: `<data folder>/hub/<user@machine>/<home path>`.
# The webapp session is on both machines (a home folder copied over): two sessions.
PUSHED = {
    "alice@laptop": {
        ".claude/projects/-home-dev-code-webapp": "cli/claude/-home-dev-code-webapp",
        ".claude/projects/-home-dev-code-agents": "cli/claude/-home-dev-code-agents",
        ".qwen/projects/-home-dev-code-qwenproj": "cli/qwen/-home-dev-code-qwenproj",
    },
    "bob@desktop": {
        ".claude/projects/-home-dev-code-webapp": "cli/claude/-home-dev-code-webapp",
        ".claude/projects/-home-dev-code-forks": "cli/claude/-home-dev-code-forks",
        ".claude/projects/-home-dev-code-bigrepo": "cli/claude/-home-dev-code-bigrepo",
    },
}


def test_a_hubs_project_list_shows_two_machines_and_narrows_to_one(
    page: Page, live_server, tmp_path: Path, transactional_db: None, settings
) -> None:
    settings.DATA_DIR = tmp_path / "data"
    as_owner(page.context, live_server.url)  # the owner token of this data folder
    settings.SESSION_ROOTS = []  # a hub: only what machines pushed
    for namespace, folders in PUSHED.items():
        for target, source in folders.items():
            shutil.copytree(FIXTURES / source, settings.DATA_DIR / "hub" / namespace / target)
    make_idle(settings.DATA_DIR / "hub")
    report = sessions_import(roots=hub_roots())
    assert not report.errors, report.errors

    page.set_viewport_size({"width": 1280, "height": 1180})  # the lists of both, in one picture
    page.goto(live_server.url + "/")
    cards = page.locator("#project-list .card")
    expect(cards).to_have_count(6)
    expect(cards.locator(".badge.machine", has_text="alice · laptop")).to_have_count(3)
    expect(cards.locator(".badge.machine", has_text="bob · desktop")).to_have_count(3)
    recent = page.locator(".recent-list .recent-row")
    expect(recent.filter(has_text="subtract feature")).to_have_count(2)  # one per machine
    shot(page, "hub")

    page.select_option("#filter-owner", "bob")
    expect(page).to_have_url(re.compile(r"owner=bob"))
    expect(cards).to_have_count(3)
    expect(cards.locator(".badge.machine", has_text="bob · desktop")).to_have_count(3)
    expect(page.locator("#hub-filter")).to_contain_text("Only the projects of bob")
    expect(recent.locator(".badge.machine", has_text="alice")).to_have_count(0)

    page.select_option("#filter-machine", "laptop")  # bob has no laptop: nothing, and the way back
    expect(cards).to_have_count(0)
    expect(page.locator("#project-list .empty")).to_contain_text("No project of bob on laptop")
    page.click("#every-machine")
    expect(cards).to_have_count(6)

    # A session's badge narrows the recent sessions to its machine.
    page.locator(".recent-row .badge.machine", has_text="alice · laptop").first.click()
    expect(page).to_have_url(re.compile(r"/recent/\?owner=alice&machine=laptop"))
    rows = page.locator("#recent-list .recent-row")
    expect(rows.first).to_be_visible()
    expect(rows.locator(".badge.machine", has_text="bob")).to_have_count(0)
    assert rows.count() == rows.locator(".badge.machine", has_text="alice · laptop").count()
