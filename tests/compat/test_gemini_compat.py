"""Gemini CLI sessions the real `gemini` 0.61.0 writes, read here as the CLI resumes them.

The CLI runs against `FakeGemini` on loopback in a throwaway HOME: a session of two
prompts (the second after `--resume latest`), imported from `~/.gemini/tmp`; then a
third run resumes it by id, and what it sends is compared with the turns numbered here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.formats import PROMPT
from sessions_app.models import Record, Session, Usage
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh
from tests.compat.clis import CliHome
from tests.compat.fake_gemini import FakeGemini
from tests.compat.gemini_cli import run_gemini

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]


def test_a_real_gemini_session_is_found_and_turned_as_the_cli_resumes_it(
    gemini_cli: Path, fake_gemini: FakeGemini, cli_home: CliHome
) -> None:
    home, cwd = cli_home.home, cli_home.cwd
    run_gemini(gemini_cli, home, cwd, fake_gemini, ["-p", "alpha one"])
    run_gemini(gemini_cli, home, cwd, fake_gemini, ["-p", "bravo two", "--resume", "latest"])

    report = sessions_import(roots=[home / ".gemini" / "tmp"])

    session = Session.objects.get(agent="gemini")
    # The resume starts a file named for its minute (its first line and the context
    # preamble alone, the same id): in another minute a stub, reported once, the session
    # kept from the file the CLI goes on in; in the same minute those lines join that file.
    files = sorted((home / ".gemini/tmp").glob("*/chats/session-*.jsonl"))
    assert {f.name[-14:-6] for f in files} == {str(session.session_id)[:8]} and len(files) <= 2
    assert session.path == str(files[0])
    assert not report.errors
    assert report.left_out == [
        f"{stub}: session id already imported from {files[0]}; skipped" for stub in files[1:]
    ]
    assert session.turn_count == 2 and session.project.path == str(cwd)
    prompts = Record.objects.filter(session=session, kind=PROMPT, active=True).order_by("line")
    assert [(r.text, r.turn) for r in prompts] == [("alpha one", 1), ("bravo two", 2)]
    usage_refresh()
    assert Usage.objects.filter(session=session).count() == 2

    fake_gemini.requests.clear()
    run_gemini(
        gemini_cli,
        home,
        cwd,
        fake_gemini,
        ["-p", "charlie three", "--resume", str(session.session_id)],
    )

    # The resume sent exactly the turns numbered here, then the new prompt.
    assert fake_gemini.sent_prompts(0) == ["alpha one", "bravo two", "charlie three"]
    sessions_import(roots=[home / ".gemini" / "tmp"])
    session.refresh_from_db()
    assert session.turn_count == 3


@pytest.mark.parametrize(
    ("turn", "include_turn", "kept"),
    [
        (1, True, ["alpha one"]),  # fork at turn 1
        (2, False, ["alpha one"]),  # edit & fork: before turn 2
        (None, True, ["alpha one", "bravo two"]),  # branch: the whole session
    ],
)
def test_a_fork_resumes_in_the_real_cli_with_exactly_its_turns(
    gemini_cli: Path,
    fake_gemini: FakeGemini,
    cli_home: CliHome,
    turn: int | None,
    include_turn: bool,
    kept: list[str],
) -> None:
    home, cwd = cli_home.home, cli_home.cwd
    run_gemini(gemini_cli, home, cwd, fake_gemini, ["-p", "alpha one"])
    run_gemini(gemini_cli, home, cwd, fake_gemini, ["-p", "bravo two", "--resume", "latest"])
    sessions_import(roots=[home / ".gemini" / "tmp"])
    source = Session.objects.get(agent="gemini")
    source_bytes = Path(source.path).read_bytes()

    fork = session_fork(session=source, turn=turn, include_turn=include_turn)

    fake_gemini.requests.clear()
    run_gemini(
        gemini_cli, home, cwd, fake_gemini, ["-p", "delta four", "--resume", str(fork.session_id)]
    )
    assert fake_gemini.sent_prompts(0) == [*kept, "delta four"]
    # The CLI went on in the fork's file, under the fork's id; the source is untouched.
    assert Path(source.path).read_bytes() == source_bytes
    sessions_import(roots=[home / ".gemini" / "tmp"])
    fork.refresh_from_db()
    assert fork.turn_count == len(kept) + 1
    # The source still resumes with its own turns.
    fake_gemini.requests.clear()
    run_gemini(
        gemini_cli, home, cwd, fake_gemini, ["-p", "echo five", "--resume", str(source.session_id)]
    )
    assert fake_gemini.sent_prompts(0) == ["alpha one", "bravo two", "echo five"]


FIXTURE = Path(__file__).parent.parent / "fixtures/gemini/tmp/demo-app/chats"
DEMO = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
DEMO_TURNS = ["list the files", "explain setup.py", "make it longer"]


@pytest.mark.parametrize(("turn", "kept"), [(None, DEMO_TURNS), (2, DEMO_TURNS[:2])])
def test_the_cli_replays_a_rewind_and_a_rerecorded_reply_as_the_turns_numbered_here(
    gemini_cli: Path,
    fake_gemini: FakeGemini,
    cli_home: CliHome,
    turn: int | None,
    kept: list[str],
) -> None:
    """tests/fixtures/gemini's session (a `$rewindTo`, a reply recorded twice, slash
    commands, `?`, a blank and a context message, notes) in the CLI's own folder for the cwd."""
    home, cwd = cli_home.home, cli_home.cwd
    chats = home / ".gemini/tmp" / cwd.name / "chats"
    chats.mkdir(parents=True)
    shutil.copy(next(FIXTURE.glob("*1a2b3c4d.jsonl")), chats)
    sessions_import(roots=[home / ".gemini" / "tmp"])
    source = Session.objects.get(session_id=DEMO)
    assert source.turn_count == 3
    resumed = source if turn is None else session_fork(session=source, turn=turn)

    run_gemini(
        gemini_cli, home, cwd, fake_gemini, ["-p", "one more", "--resume", str(resumed.session_id)]
    )

    assert fake_gemini.sent_prompts(0) == [*kept, "one more"]
