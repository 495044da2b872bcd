"""Gemini CLI rewind, undo and runs from the page, judged by the real `gemini` 0.61.0.

The CLI runs against `FakeGemini` on loopback in a throwaway HOME. A session of three
prompts, the second and third after `--resume latest` (so the file holds what a resume
writes: a second metadata line, `$set.sessionId`, `$set.messages`), is imported and
rewound here; then `gemini --resume <id>` runs and the prompts it sends are compared
with the turns kept. The rewind is the CLI's own `$rewindTo` line, so the old turns stay
in the file; its undo cuts that line away.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from sessions_app.models import Run, Session
from sessions_app.services.audit import PAGE, Actor
from sessions_app.services.branching import session_rewind, session_rewind_undo
from sessions_app.services.importing import sessions_import
from sessions_app.services.runs import run_start, run_stop
from tests.compat.clis import CliHome
from tests.compat.fake_gemini import FakeGemini
from tests.compat.gemini_cli import run_gemini

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]

PROMPTS = ["alpha one", "bravo two", "charlie three"]
ACTOR = Actor(name="tester", origin=PAGE)


def _prompts(session: Session) -> list[str]:
    return list(session.records.turn_starts().order_by("line").values_list("text", flat=True))


@pytest.fixture
def session(gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome, settings) -> Session:
    """Three prompts the real CLI recorded, two of them after a resume, imported."""
    home, cwd = cli_home.home, cli_home.cwd
    run_gemini(gemini_cli, home, cwd, fake_gemini, ["-p", PROMPTS[0]])
    for prompt in PROMPTS[1:]:
        run_gemini(gemini_cli, home, cwd, fake_gemini, ["-p", prompt, "--resume", "latest"])
    root = home / ".gemini" / "tmp"
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0  # the CLI wrote the file a moment ago
    sessions_import(roots=[root])
    found = Session.objects.get(agent="gemini", kind=Session.Kind.ORIGINAL)
    assert _prompts(found) == PROMPTS
    assert b'"$set":{"messages"' in Path(found.path).read_bytes()  # a resume wrote it
    return found


def _resume(gemini_cli: Path, cli_home: CliHome, fake: FakeGemini, session: Session, prompt: str):
    fake.requests.clear()
    run_gemini(
        gemini_cli,
        cli_home.home,
        cli_home.cwd,
        fake,
        ["-p", prompt, "--resume", str(session.session_id)],
    )
    return fake.sent_prompts()


@pytest.mark.parametrize("turn", [2, 3])
def test_after_a_rewind_the_real_cli_resumes_with_exactly_the_turns_before_it(
    session: Session, gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome, turn: int
) -> None:
    rewound = session_rewind(session=session, turn=turn)
    assert _prompts(rewound) == PROMPTS[: turn - 1]

    sent = _resume(gemini_cli, cli_home, fake_gemini, rewound, "delta four")

    assert sent == [*PROMPTS[: turn - 1], "delta four"]
    # The CLI went on in the same file; read again, it has the turns the CLI sent.
    sessions_import(roots=[cli_home.home / ".gemini" / "tmp"])
    again = Session.objects.get(pk=session.pk)
    assert _prompts(again) == [*PROMPTS[: turn - 1], "delta four"]
    assert again.abandoned  # the rewound turns stay in the file, an abandoned branch


def test_undo_gives_the_file_back_and_the_real_cli_resumes_every_turn(
    session: Session, gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome
) -> None:
    path = Path(session.path)
    old = path.read_bytes()
    rewound = session_rewind(session=session, turn=2)

    restored = session_rewind_undo(session=rewound)

    assert path.read_bytes() == old and _prompts(restored) == PROMPTS
    assert _resume(gemini_cli, cli_home, fake_gemini, restored, "delta four") == [
        *PROMPTS,
        "delta four",
    ]


def test_a_session_the_cli_resumed_after_a_rewind_rewinds_again(
    session: Session, gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome
) -> None:
    root = cli_home.home / ".gemini" / "tmp"
    rewound = session_rewind(session=session, turn=3)
    _resume(gemini_cli, cli_home, fake_gemini, rewound, "delta four")
    sessions_import(roots=[root])
    resumed = Session.objects.get(pk=session.pk)
    assert _prompts(resumed) == [*PROMPTS[:2], "delta four"]

    again = session_rewind(session=resumed, turn=3)  # "delta four" goes

    assert _prompts(again) == PROMPTS[:2]
    assert _resume(gemini_cli, cli_home, fake_gemini, again, "echo five") == [
        *PROMPTS[:2],
        "echo five",
    ]


def _wait_for(check, what: str, deadline: float = 90) -> None:
    until = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < until, f"{what}: not within {deadline} s"
        time.sleep(0.1)


@pytest.fixture
def as_a_user_runs_it(
    gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome, settings, monkeypatch
) -> None:
    """The server's environment as a user's would be: their HOME, their API key and endpoint."""
    for name, value in {
        "HOME": str(cli_home.home),
        "GEMINI_API_KEY": "x",
        "GOOGLE_GEMINI_BASE_URL": fake_gemini.url,
        "NO_PROXY": "127.0.0.1,localhost",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "TERM": "dumb",
    }.items():
        monkeypatch.setenv(name, value)
    settings.RUN_COMMANDS = {"gemini": str(gemini_cli)}
    settings.RUN_STOP_GRACE = 3
    fake_gemini.requests.clear()


@pytest.mark.usefixtures("as_a_user_runs_it")
def test_a_run_from_the_page_resumes_gemini_and_its_answer_is_imported(
    session: Session, fake_gemini: FakeGemini, cli_home: CliHome, client
) -> None:
    assert session.cwd == str(cli_home.cwd)  # from the project's `.project_root`

    run = run_start(session=session, prompt="-delta four", mode="plan", model="", actor=ACTOR)

    _wait_for(lambda: Run.objects.get(pk=run.pk).ended_at is not None, "the run ended")
    run.refresh_from_db()
    assert run.state == Run.State.FINISHED and run.exit_status == 0, run.message
    assert run.command[1:3] == ["--resume", str(session.session_id)]
    assert "--skip-trust" in run.command and run.command[-1] == "--prompt=<prompt, 11 characters>"
    assert fake_gemini.sent_prompts() == [*PROMPTS, "-delta four"]
    _wait_for(
        lambda: _prompts(Session.objects.get(pk=session.pk)) == [*PROMPTS, "-delta four"],
        "the new turn was imported",
    )
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert "reply to: -delta four" in page


@pytest.mark.usefixtures("as_a_user_runs_it")
def test_a_stopped_gemini_run_leaves_the_file_whole_and_resumable(
    session: Session, gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome, settings
) -> None:
    run = run_start(session=session, prompt="STALL here", mode="plan", model="", actor=ACTOR)
    assert fake_gemini.stalled.wait(90), "the model was never asked"

    run_stop(run)

    _wait_for(lambda: Run.objects.get(pk=run.pk).ended_at is not None, "the stopped run ended")
    run.refresh_from_db()
    assert run.state == Run.State.STOPPED and run.exit_status is not None, run.message
    # Every line of the file is whole, and the real CLI takes the session up again: the
    # turns before, then the stopped prompt (recorded before the model was asked, with no
    # reply) and the new one, which the CLI sends as one user message of two parts.
    for line in Path(session.path).read_bytes().splitlines():
        assert isinstance(orjson.loads(line), dict)
    sent = _resume(gemini_cli, cli_home, fake_gemini, session, "echo five")
    assert sent == [*PROMPTS, "STALL here" + "echo five"]
    sessions_import(roots=settings.SESSION_ROOTS)
    assert _prompts(Session.objects.get(pk=session.pk)) == [*PROMPTS, "STALL here", "echo five"]
