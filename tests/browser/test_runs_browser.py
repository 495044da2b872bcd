"""Carry on in the browser with the real `claude` and `qwen` CLIs against the loopback fake model.

The live server starts the CLI the way a user's dashboard would: the server's own
environment (here pointed at the fake model and a throwaway HOME), the session's
folder, the prompt typed into the page.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from playwright.sync_api import Page, expect

from sessions_app.models import AuditEntry, Run, Session
from tests.compat.clis import CliHome, claude_env, qwen_env
from tests.compat.fake_model import FakeModel
from tests.compat.test_fork_compat import Agent

pytestmark = [pytest.mark.compat]


@pytest.fixture(params=["claude", "qwen"])
def agent(
    request, clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome, monkeypatch, settings
) -> Agent:
    agent = Agent(request.param, clis[request.param], fake_model, cli_home)
    env = (claude_env if agent.name == "claude" else qwen_env)(cli_home.home, fake_model)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings.RUN_COMMANDS = {agent.name: str(agent.exe)}
    settings.SESSION_ROOTS = [agent.root]
    settings.RUN_STOP_GRACE = 3
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    return agent


def send(page: Page, prompt: str, mode: str = "edits") -> None:
    page.locator("#run-prompt").fill(prompt)
    page.locator(f"#run-form input[name=mode][value={mode}]").check()
    page.locator("#run-send").click()


def records(path: str) -> list[dict]:
    return [orjson.loads(line) for line in Path(path).read_bytes().splitlines()]


def test_a_prompt_sent_from_the_page_runs_the_cli_and_the_answer_streams_in(
    page: Page, live_server, transactional_db: None, agent: Agent
) -> None:
    sid = agent.session(["alpha one"])
    agent.import_all()
    page.goto(f"{live_server.url}/sessions/{sid}/")
    expect(page.locator("#session-counts")).to_contain_text("1 ·")

    send(page, "beta two")
    expect(page.locator("#turns")).to_contain_text("reply to: beta two", timeout=60_000)
    expect(page.locator("#session-counts")).to_contain_text("2 ·")
    expect(page.locator("#run-status .run-state")).to_have_text("finished", timeout=30_000)
    run = Run.objects.get()
    assert run.exit_status == 0 and run.mode == "edits"
    assert "<prompt, 8 characters>" in " ".join(run.command) and "beta two" not in run.command
    assert AuditEntry.objects.filter(action="run", session_id=sid).exists()
    # The model saw the whole history and the new prompt.
    mains = agent.fm.main_requests()
    assert ("user", "alpha one") in mains[-1].conversation
    assert ("user", "beta two") in mains[-1].conversation
    assert not agent.fm.egress_attempts


def test_a_long_run_is_refused_a_second_send_and_stops_leaving_the_file_whole(
    page: Page, live_server, transactional_db: None, agent: Agent
) -> None:
    sid = agent.session(["alpha one"])
    agent.import_all()
    page.goto(f"{live_server.url}/sessions/{sid}/")
    # (Claude Code refuses a bare `sleep`.)
    send(page, "RUN: python3 -c 'import time; time.sleep(120)'", mode="full")
    expect(page.locator("#run-stop")).to_be_visible(timeout=30_000)
    # The model asked for the shell command: the CLI is in the middle of the turn.
    expect(page.locator("#turns")).to_contain_text("time.sleep(120)", timeout=60_000)
    running = Run.objects.get()
    assert running.state == "running"

    token = page.locator("#run-panel input[name=csrfmiddlewaretoken]").first.input_value()
    second = page.request.post(
        f"{live_server.url}/sessions/{sid}/runs/",
        form={"prompt": "again", "mode": "plan", "csrfmiddlewaretoken": token},
        headers={"HX-Request": "true", "Referer": live_server.url},
    )
    assert second.status == 409
    assert f"run {running.pk} " in second.text() and "still going" in second.text()
    assert Run.objects.count() == 1

    page.locator("#run-stop").click()
    expect(page.locator("#run-status .run-state")).to_have_text("stopped", timeout=30_000)
    stopped = Run.objects.get()
    assert stopped.state == "stopped" and stopped.exit_status is not None
    session = Session.objects.get(session_id=sid)
    assert records(session.path)  # every line parses
    expect(page.locator("#run-form")).to_be_visible()


def test_a_run_on_a_fork_carries_on_with_exactly_the_forks_history(
    page: Page, live_server, transactional_db: None, agent: Agent
) -> None:
    sid = agent.session(["alpha one", "beta two", "gamma three"])
    agent.import_all()
    agent.fm.clear()
    # "Branch from here" on turn 2, then type the next prompt: one flow.
    page.goto(f"{live_server.url}/sessions/{sid}/")
    page.locator("#turn-2 button.branch-here").click()
    expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f-]{36}/#run$"))
    fork = page.url.rsplit("/sessions/", 1)[1].split("/")[0]
    assert fork != sid and Session.objects.get(session_id=fork).turn_count == 2
    expect(page.locator("#run-prompt")).to_be_focused()
    send(page, "delta after the fork", mode="plan")
    expect(page.locator("#turns")).to_contain_text("reply to: delta after the fork", timeout=60_000)
    users = [t for r, t in agent.fm.main_requests()[0].conversation if r == "user"]
    assert users == ["alpha one", "beta two", "delta after the fork"]
    source = Session.objects.get(session_id=sid)
    assert source.turn_count == 3  # the source is untouched


def test_a_run_that_fails_shows_the_clis_own_words(
    page: Page, live_server, transactional_db: None, agent: Agent, monkeypatch, settings
) -> None:
    sid = agent.session(["alpha one"])
    agent.import_all()
    session = Session.objects.get(session_id=sid)
    page.goto(f"{live_server.url}/sessions/{sid}/")
    # A CLI that is not installed: refused with what to do, nothing started.
    settings.RUN_COMMANDS = {agent.name: "/nonexistent/cli"}
    send(page, "beta two")
    expect(page.locator("#run-panel .action-error")).to_contain_text(
        "/nonexistent/cli: no such command"
    )
    assert not Run.objects.exists()
    if agent.name != "claude":
        return
    # Not logged in (no key, no credentials): the CLI's own words, and the file as it
    # was (the CLI appends the prompt and its error; the failed run takes them back).
    settings.RUN_COMMANDS = {agent.name: str(agent.exe)}
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    before = Path(session.path).read_bytes()
    send(page, "beta two")
    expect(page.locator("#run-status .run-state")).to_have_text("failed", timeout=60_000)
    run = Run.objects.get()
    assert run.message.startswith("Not logged in · Please run /login"), run.message
    assert "taken out and kept in" in run.message
    expect(page.locator("#run-message")).to_contain_text("Not logged in · Please run /login")
    assert Path(session.path).read_bytes() == before
    kept = Path(run.message.rsplit("kept in ", 1)[1].rstrip("."))
    assert b"beta two" in kept.read_bytes()
    expect(page.locator("#session-counts")).to_contain_text("1 ·")
