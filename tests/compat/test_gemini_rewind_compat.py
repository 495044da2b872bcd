"""Gemini CLI rewind and undo as the real `gemini` 0.61.0 resumes them (issue 45).

A session of three prompts written by the CLI against `FakeGemini` on loopback; rewound
here to turn N (the CLI's own `$rewindTo` appended), then resumed by id: the CLI sends
exactly prompts 1..N-1 and the new one. Undone: the file is the CLI's own bytes again and
it resumes with all three.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.branching import session_rewind, session_rewind_undo
from sessions_app.services.importing import sessions_import
from tests.compat.clis import CliHome
from tests.compat.fake_gemini import FakeGemini
from tests.compat.gemini_cli import run_gemini
from tests.compat.test_gemini_compat import _sent_prompts, fake_gemini, gemini_cli

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]
__all__ = ["fake_gemini", "gemini_cli"]  # the fixtures, shared with the fork tests

PROMPTS = ["alpha one", "bravo two", "charlie three"]


@pytest.fixture(autouse=True)
def _no_busy_wait(settings) -> None:
    """The CLI has exited when `run_gemini` returns: no need to wait for the file to rest."""
    settings.BRANCHBOARD_BUSY_SECONDS = 0


def _three_turns(gemini_cli: Path, fake: FakeGemini, cli_home: CliHome) -> Session:
    home, cwd = cli_home.home, cli_home.cwd
    run_gemini(gemini_cli, home, cwd, fake, ["-p", PROMPTS[0]])
    for prompt in PROMPTS[1:]:
        run_gemini(gemini_cli, home, cwd, fake, ["-p", prompt, "--resume", "latest"])
    sessions_import(roots=[home / ".gemini" / "tmp"])
    session = Session.objects.get(agent="gemini")
    assert session.turn_count == 3
    return session


@pytest.mark.parametrize("turn", [2, 3])
def test_a_rewound_session_resumes_with_exactly_the_turns_before(
    gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome, turn: int
) -> None:
    session = _three_turns(gemini_cli, fake_gemini, cli_home)

    rewound = session_rewind(session=session, turn=turn)
    assert rewound.turn_count == turn - 1

    fake_gemini.requests.clear()
    run_gemini(
        gemini_cli,
        cli_home.home,
        cli_home.cwd,
        fake_gemini,
        ["-p", "delta four", "--resume", str(session.session_id)],
    )
    assert _sent_prompts(fake_gemini, 0) == [*PROMPTS[: turn - 1], "delta four"]
    # What the CLI wrote after the rewind reads as it resumed: turns 1..N-1, then the new one.
    sessions_import(roots=[cli_home.home / ".gemini" / "tmp"])
    rewound = Session.objects.get(session_id=session.session_id)
    assert rewound.turn_count == turn


def test_an_undone_rewind_gives_the_clis_file_back_and_it_resumes_every_turn(
    gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome
) -> None:
    session = _three_turns(gemini_cli, fake_gemini, cli_home)
    before = Path(session.path).read_bytes()

    restored = session_rewind_undo(session=session_rewind(session=session, turn=2))

    assert Path(session.path).read_bytes() == before and restored.turn_count == 3
    fake_gemini.requests.clear()
    run_gemini(
        gemini_cli,
        cli_home.home,
        cli_home.cwd,
        fake_gemini,
        ["-p", "echo five", "--resume", str(session.session_id)],
    )
    assert _sent_prompts(fake_gemini, 0) == [*PROMPTS, "echo five"]
