"""Carry a Codex session on from the page's own service with the real codex 0.169.

`run_start` starts `codex exec resume <id> --json ...` the way a user's dashboard
would: the server's environment (here CODEX_HOME in a throwaway HOME, whose
`config.toml` points the built-in provider at the loopback fake model, as a user's
own config names their provider), the session's folder, the prompt typed on the page.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from sessions_app.models import Record, Run, Session
from sessions_app.services.audit import PAGE, Actor
from sessions_app.services.importing import sessions_import
from sessions_app.services.runs import run_start, run_stop
from tests.compat.clis import CODEX_MODEL, CliHome, codex_env, codex_home, run_codex
from tests.compat.fake_model import FakeModel

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]

ACTOR = Actor(name="tester", origin=PAGE)


@pytest.fixture
def codex_session(
    codex_cli: Path, fake_model: FakeModel, cli_home: CliHome, monkeypatch, settings
) -> Session:
    """A one-turn session codex wrote, imported, with codex set up as a user would have it."""
    first = run_codex(cli_home.home, cli_home.cwd, fake_model, ["alpha one"], executable=codex_cli)
    home = codex_home(cli_home.home)
    # What the harness passes as -c/--disable, in the user's config file instead.
    (home / "config.toml").write_text(
        f'openai_base_url = "{fake_model.openai_url}"\n'
        "[analytics]\nenabled = false\n"
        "[features]\nplugins = false\nremote_plugin = false\napps = false\n"
    )
    for name, value in codex_env(cli_home.home, fake_model).items():
        monkeypatch.setenv(name, value)
    settings.RUN_COMMANDS = {"codex": str(codex_cli)}
    settings.SESSION_ROOTS = [home / "sessions"]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    settings.RUN_STOP_GRACE = 3
    sessions_import(roots=[home / "sessions"])
    fake_model.clear()
    return Session.objects.get(session_id=first.session_id)


def wait_for(check, what: str, deadline: float = 90) -> None:
    until = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < until, f"{what}: not within {deadline} s"
        time.sleep(0.1)


def ended(run: Run) -> bool:
    run.refresh_from_db()
    return run.ended_at is not None


def test_a_run_from_the_page_resumes_codex_and_its_answer_is_imported(
    codex_session: Session, fake_model: FakeModel, client
) -> None:
    run = run_start(
        session=codex_session, prompt="beta two", mode="plan", model=CODEX_MODEL, actor=ACTOR
    )

    wait_for(lambda: ended(run), "the run ended")
    assert run.state == Run.State.FINISHED and run.exit_status == 0, run.message
    assert run.command[1:4] == ["exec", "resume", str(codex_session.session_id)]
    assert 'sandbox_mode="read-only"' in run.command and "<prompt, 8 characters>" in run.command
    session = Session.objects.get(pk=codex_session.pk)
    wait_for(
        lambda: Session.objects.get(pk=session.pk).turn_count == 2, "the new turn was imported"
    )
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert "reply to: beta two" in page and "beta two" in page
    assert Record.objects.filter(session=session, turn=2, starts_turn=True, text="beta two")
    # Codex sent the session's history and the new prompt, and nothing left the machine.
    assert fake_model.main_requests()[-1].prompts == ["alpha one", "beta two"]
    assert not fake_model.egress_attempts


def test_a_stopped_codex_run_leaves_the_file_whole_and_resumable(
    codex_session: Session, fake_model: FakeModel, codex_cli: Path, cli_home: CliHome
) -> None:
    run = run_start(
        session=codex_session, prompt="STALL here", mode="full", model=CODEX_MODEL, actor=ACTOR
    )
    assert fake_model.stalled.wait(90), "the model was never asked"

    run_stop(run)

    wait_for(lambda: ended(run), "the stopped run ended")
    assert run.state == Run.State.STOPPED and run.exit_status is not None
    lines = Path(codex_session.path).read_bytes().splitlines()
    assert all(orjson.loads(line) for line in lines)  # every line whole
    # The real codex takes it up again, the stopped prompt part of the history.
    fake_model.clear()
    again = run_codex(
        cli_home.home,
        cli_home.cwd,
        fake_model,
        ["resume", str(codex_session.session_id), "gamma three"],
        executable=codex_cli,
    )
    assert again.session_id == str(codex_session.session_id)
    assert fake_model.main_requests()[-1].prompts == ["alpha one", "STALL here", "gamma three"]
