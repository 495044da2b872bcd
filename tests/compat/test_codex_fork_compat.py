"""The real codex 0.169 resumes every fork branchboard writes of a Codex session, by id, with
exactly the intended history: the prompts of turns 1..N and nothing after (issue 29)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from tests.compat.clis import CliHome, codex_home, run_codex
from tests.compat.fake_model import FakeModel
from tests.facts import CODEX_RESUMABLE

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]

FIXTURES = Path(__file__).parent.parent / "fixtures" / "cli" / "codex" / "sessions"
# Every Codex fixture codex 0.169 resumes from its own file, with its prompts by turn.
RESUMABLE = CODEX_RESUMABLE
# (session, action, turn): branch, fork from every turn, edit & fork before every turn > 1.
ACTIONS = [
    (sid, action, turn)
    for sid, prompts in sorted(RESUMABLE.items())
    for action, turns in (
        ("branch", [None]),
        ("fork", range(1, len(prompts) + 1)),
        ("before", range(2, len(prompts) + 1)),
    )
    for turn in turns
]


def _fork(session: Session, action: str, turn: int | None) -> tuple[Session, int]:
    """The new session and how many turns it keeps."""
    if action == "branch":
        return session_fork(session=session), session.turn_count
    assert turn is not None
    include = action == "fork"
    return session_fork(session=session, turn=turn, include_turn=include), turn - (not include)


@pytest.mark.parametrize(("session_id", "action", "turn"), ACTIONS)
def test_codex_resumes_the_fork_with_exactly_the_kept_prompts(
    codex_cli: Path,
    fake_model: FakeModel,
    tmp_path: Path,
    settings,
    session_id: str,
    action: str,
    turn: int | None,
) -> None:
    # branchboard works on a CODEX_HOME holding only the source, as codex left it.
    home = CliHome(home=tmp_path / "home", cwd=tmp_path / "home" / "project")
    home.cwd.mkdir(parents=True)
    sessions = codex_home(home.home) / "sessions"
    (source_file,) = FIXTURES.rglob(f"rollout-*-{session_id}.jsonl")
    copy = sessions / source_file.relative_to(FIXTURES)
    copy.parent.mkdir(parents=True)
    shutil.copy2(source_file, copy)
    settings.SESSION_ROOTS = [sessions]
    sessions_import(roots=[sessions])
    source = Session.objects.get(session_id=session_id)
    source_bytes = copy.read_bytes()

    new, kept = _fork(source, action, turn)

    written = sorted(p for p in sessions.rglob("*") if p.is_file())
    assert written == sorted([copy, Path(new.path)])  # only the source and the new file
    assert copy.read_bytes() == source_bytes
    run = run_codex(home.home, home.cwd, fake_model, ["resume", str(new.session_id), "next"])
    assert run.session_id == str(new.session_id)  # found by its id, by scanning
    (sent,) = [r for r in fake_model.requests if r.api == "responses"]
    assert sent.prompts == [*RESUMABLE[session_id][:kept], "next"]
    assert copy.read_bytes() == source_bytes  # codex appended to the fork, not the source


def test_the_fork_survives_its_source_being_deleted(
    codex_cli: Path, fake_model: FakeModel, tmp_path: Path, settings
) -> None:
    # A copy, not codex 0.169's own paginated fork: no `history_base` into the source's bytes.
    home = CliHome(home=tmp_path / "home", cwd=tmp_path / "home" / "project")
    home.cwd.mkdir(parents=True)
    sessions = codex_home(home.home) / "sessions"
    shutil.copytree(FIXTURES, sessions)
    settings.SESSION_ROOTS = [sessions]
    sessions_import(roots=[sessions])
    source = Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf")
    new = session_fork(session=source, turn=2)
    Path(source.path).unlink()

    run = run_codex(home.home, home.cwd, fake_model, ["resume", str(new.session_id), "next"])

    assert run.session_id == str(new.session_id)
    (sent,) = [r for r in fake_model.requests if r.api == "responses"]
    assert sent.prompts == ["RUN: ls -1", "PATCH: notes.txt :: first note", "next"]
