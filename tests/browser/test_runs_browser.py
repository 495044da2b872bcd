"""Carry on in the browser with the real `claude`, `qwen` and `codex` CLIs and a fake model.

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
from sessions_app.services.importing import sessions_import
from tests.compat.clis import CODEX_MODEL, CliHome, claude_env, codex_env, codex_home, qwen_env
from tests.compat.conftest import codex_cli  # noqa: F401 (the real codex)
from tests.compat.fake_model import FakeModel
from tests.compat.test_fork_compat import Agent

pytestmark = [pytest.mark.compat]

CODEX_FIXTURES = Path(__file__).parent.parent / "fixtures" / "cli" / "codex" / "sessions"
# Three turns the real codex 0.169 recorded (tests/fixtures/cli/codex/README.md).
CODEX_THREE_TURNS = "01a21760-a9c0-7191-881d-5cbb883febdf"
CODEX_PROMPTS = ["RUN: ls -1", "PATCH: notes.txt :: first note", "thanks, that is all"]


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
    # The server's refusal (the form's own #run-refusal slot stays hidden and empty).
    expect(page.locator("#run-panel > .action-error")).to_contain_text(
        "/nonexistent/cli: no such command"
    )
    assert not Run.objects.exists()
    # The panel no longer offers a box to type in vain: it says why.
    expect(page.locator("#run-no-cli")).to_contain_text("/nonexistent/cli: no such command")
    expect(page.locator("#run-form")).to_have_count(0)
    if agent.name != "claude":
        return
    # Not logged in (no key, no credentials): the CLI's own words, and the file as it
    # was (the CLI appends the prompt and its error; the failed run takes them back).
    settings.RUN_COMMANDS = {agent.name: str(agent.exe)}
    page.reload()  # installed now: the box is back
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


@pytest.fixture
def codex_session(
    codex_cli: Path,  # noqa: F811 (the fixture imported above)
    fake_model: FakeModel,
    cli_home: CliHome,
    monkeypatch,
    settings,
    transactional_db: None,
) -> Path:
    """A Codex fixture in a throwaway CODEX_HOME's sessions tree, imported; its rollout file.

    The copy names the throwaway project folder as its cwd (the recording's /tmp folder
    is gone), so the page offers a run there; codex is set up as a user would have it:
    `config.toml` points the built-in provider at the loopback fake model.
    """
    home = codex_home(cli_home.home)
    sessions = home / "sessions"
    (source,) = CODEX_FIXTURES.rglob(f"rollout-*-{CODEX_THREE_TURNS}.jsonl")
    recorded = orjson.loads(source.read_bytes().splitlines()[0])["payload"]["cwd"]
    copy = sessions / source.relative_to(CODEX_FIXTURES)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(source.read_bytes().replace(recorded.encode(), str(cli_home.cwd).encode()))
    # What the harness passes as -c/--disable, in the user's config file instead.
    (home / "config.toml").write_text(
        f'openai_base_url = "{fake_model.openai_url}"\n'
        "[analytics]\nenabled = false\n"
        "[features]\nplugins = false\nremote_plugin = false\napps = false\n"
    )
    for name, value in codex_env(cli_home.home, fake_model).items():
        monkeypatch.setenv(name, value)
    settings.RUN_COMMANDS = {"codex": str(codex_cli)}
    settings.SESSION_ROOTS = [sessions]
    settings.RUN_STOP_GRACE = 3
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    report = sessions_import(roots=[sessions])
    assert not report.errors, report.errors
    return copy


def test_a_codex_session_carried_on_from_the_page_resumes_by_id_and_the_answer_streams_in(
    page: Page, live_server, codex_session: Path, fake_model: FakeModel, cli_home: CliHome
) -> None:
    page.goto(f"{live_server.url}/sessions/{CODEX_THREE_TURNS}/")
    expect(page.locator("#session-counts")).to_contain_text("3 ·")
    expect(page.locator("#run-form")).to_contain_text("Carry on with Codex CLI")

    page.locator("#run-form input[name=model]").fill(CODEX_MODEL)
    send(page, "beta two", mode="plan")
    expect(page.locator("#turns")).to_contain_text("reply to: beta two", timeout=90_000)
    expect(page.locator("#session-counts")).to_contain_text("4 ·")
    expect(page.locator("#run-status .run-state")).to_have_text("finished", timeout=30_000)

    run = Run.objects.get()
    assert run.exit_status == 0 and run.mode == "plan" and run.model == CODEX_MODEL, run.message
    # Found by its id: `exec resume <id>`, and codex appended to the copy, no new rollout.
    assert run.command[1:4] == ["exec", "resume", CODEX_THREE_TURNS]
    sessions = codex_home(cli_home.home) / "sessions"
    assert list(sessions.rglob("*.jsonl")) == [codex_session]
    assert b"reply to: beta two" in codex_session.read_bytes()
    # The plan mode as Codex's sandbox and approval flags, shown on the run.
    shown = page.locator("#run-status .run-command")
    for flag in ('sandbox_mode="read-only"', 'approval_policy="never"', "-m gpt-5.5"):
        expect(shown).to_contain_text(flag)
    assert 'sandbox_mode="read-only"' in run.command and 'approval_policy="never"' in run.command
    assert "--dangerously-bypass-approvals-and-sandbox" not in run.command
    assert "<prompt, 8 characters>" in run.command and "beta two" not in run.command
    assert AuditEntry.objects.filter(action="run", session_id=CODEX_THREE_TURNS).exists()
    # Codex sent the session's three prompts and the new one, and nothing left the machine.
    assert fake_model.main_requests()[-1].prompts == [*CODEX_PROMPTS, "beta two"]
    assert not fake_model.egress_attempts
