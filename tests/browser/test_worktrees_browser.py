"""Fork into a git worktree from a turn, then remove the worktree, clicked in a real browser."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.models import Session
from tests.test_worktrees import claude_session, make_repo, run


def test_fork_into_a_worktree_and_remove_it(
    page: Page, live_server, transactional_db: None, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "code" / "app")
    source = claude_session(tmp_path / "claude-projects", repo, turns=3)
    page.goto(f"{live_server.url}/sessions/{source.session_id}/")

    page.get_by_text("Fork into a new git worktree…").click()
    form = page.locator("#worktree-form")
    form.locator("input[name=turn]").fill("2")
    form.locator("input[name=worktree_name]").fill("in-browser")
    form.locator("#worktree-fork").click()

    path = repo / ".claude" / "worktrees" / "in-browser"
    expect(page).not_to_have_url(re.compile(f"/sessions/{source.session_id}/"))
    expect(page.locator(".message")).to_contain_text(f"in the new worktree {path}")
    expect(page.locator(".message")).to_contain_text(f"cd {path} && claude --resume")
    new = Session.objects.get(parent=source)
    assert new.turn_count == 2 and new.cwd == str(path)
    assert run("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "worktree-in-browser"

    page.goto(f"{live_server.url}/projects/{source.project_id}/")
    panel = page.locator("#worktrees")
    expect(panel).to_contain_text(str(path))
    expect(panel).to_contain_text("worktree-in-browser")
    panel.locator("button.worktree-remove").click()
    expect(page.locator(".message")).to_contain_text(f"Removed the worktree {path}")
    assert not path.exists()
    assert run("branch", "--list", "worktree-in-browser", cwd=repo) == ""


def test_fork_into_a_worktree_with_the_files_of_that_turn(
    page: Page, live_server, transactional_db: None, tmp_path: Path
) -> None:
    from tests.test_worktree_files import Story

    repo = make_repo(tmp_path / "code" / "app")
    (repo / "a.txt").write_text("a committed\n")
    run("add", "-A", cwd=repo)
    run("commit", "-qm", "a", cwd=repo)
    story = Story(tmp_path / "claude" / "projects", repo)
    page.goto(f"{live_server.url}/sessions/{story.sid}/")

    page.get_by_text("Fork into a new git worktree…").click()
    form = page.locator("#worktree-form")
    expect(form.locator("#worktree-with-files")).to_be_checked()
    form.locator("input[name=turn]").fill("1")
    form.locator("input[name=worktree_name]").fill("with-files")
    form.locator("#worktree-fork").click()

    expect(page.locator(".message").last).to_contain_text(
        "Files as they were after turn 1: 2 restored: a.txt, b.txt."
    )
    path = repo / ".claude" / "worktrees" / "with-files"
    assert (path / "a.txt").read_text() == "a after turn 1\n"


def test_remove_asks_before_dropping_ignored_files_and_someone_elses_worktree(
    page: Page, live_server, transactional_db: None, tmp_path: Path
) -> None:
    from sessions_app.services.worktrees import worktree_fork

    repo = make_repo(tmp_path / "code" / "app")
    (repo / ".gitignore").write_text(".env\n")
    run("add", ".gitignore", cwd=repo)
    run("commit", "-qm", "ignore secrets", cwd=repo)
    source = claude_session(tmp_path / "claude-projects", repo)
    ours = worktree_fork(session=source, slug="with-secret").plan.path
    (ours / ".env").write_text("SECRET=1\n")
    theirs = repo / ".claude" / "worktrees" / "agent-abcdef1"
    run("worktree", "add", "-q", "-b", "cli-agent", str(theirs), cwd=repo)

    page.goto(f"{live_server.url}/projects/{source.project_id}/")
    ours_row = page.locator("#worktrees tr", has_text=str(ours))
    expect(ours_row).to_contain_text("1 ignored: .env")
    ours_row.locator("button.worktree-remove").click()
    message = page.locator(".message.error")
    expect(message).to_contain_text("1 ignored: .env")
    expect(message).to_contain_text("confirm discarding them")
    assert (ours / ".env").read_text() == "SECRET=1\n"

    ours_row = page.locator("#worktrees tr", has_text=str(ours))
    ours_row.locator("input[name=discard]").check()
    ours_row.locator("button.worktree-remove").click()
    expect(page.locator(".message.success")).to_contain_text(f"Removed the worktree {ours}")
    assert not ours.exists()

    theirs_row = page.locator("#worktrees tr", has_text=str(theirs))
    theirs_row.locator("button.worktree-remove").click()
    expect(page.locator(".message.error")).to_contain_text("not made by branchboard")
    assert theirs.is_dir()
    theirs_row = page.locator("#worktrees tr", has_text=str(theirs))
    theirs_row.locator("input[name=foreign]").check()
    theirs_row.locator("button.worktree-remove").click()
    expect(page.locator(".message.success")).to_contain_text(f"Removed the worktree {theirs}")
    assert not theirs.exists()
