"""The real codex 0.169 resumes a Codex session branchboard rewound in place with exactly the
kept prompts, and after the undo with every prompt again: in a fresh CODEX_HOME, and after
codex already resumed that session once (a row and history for it in its databases)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.branching import session_rewind, session_rewind_undo
from sessions_app.services.importing import sessions_import
from tests.compat.clis import CliHome, codex_home, run_codex
from tests.compat.fake_model import FakeModel
from tests.facts import CODEX_RESUMABLE

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]

FIXTURES = Path(__file__).parent.parent / "fixtures" / "cli" / "codex" / "sessions"
# Every Codex fixture whose own file is its whole history, with its prompts by turn.
REWINDABLE = CODEX_RESUMABLE
REWINDS = [
    (sid, turn)
    for sid, prompts in sorted(REWINDABLE.items())
    for turn in range(2, len(prompts) + 1)
]


def _home(tmp_path: Path, settings, session_id: str) -> tuple[CliHome, Path, Path]:
    """A CODEX_HOME holding only this fixture, as codex left it: (home, sessions, file)."""
    home = CliHome(home=tmp_path / "home", cwd=tmp_path / "home" / "project")
    home.cwd.mkdir(parents=True)
    sessions = codex_home(home.home) / "sessions"
    (source_file,) = FIXTURES.rglob(f"rollout-*-{session_id}.jsonl")
    copy = sessions / source_file.relative_to(FIXTURES)
    copy.parent.mkdir(parents=True)
    shutil.copy2(source_file, copy)
    settings.SESSION_ROOTS = [sessions]
    return home, sessions, copy


def _sent(fake_model: FakeModel) -> list[str]:
    (sent,) = [r for r in fake_model.requests if r.api == "responses"]
    fake_model.clear()
    return sent.prompts


def _idle(path: Path) -> None:
    """The file as codex leaves it a minute after a run (a rewind refuses a file written just
    now, as by a running CLI)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 60 * 10**9))


@pytest.mark.parametrize(("session_id", "turn"), REWINDS)
def test_codex_resumes_the_rewound_session_with_the_kept_prompts_then_all_after_undo(
    codex_cli: Path, fake_model: FakeModel, tmp_path: Path, settings, session_id: str, turn: int
) -> None:
    # (a) A fresh CODEX_HOME: no database of codex's names the session yet.
    home, sessions, path = _home(tmp_path, settings, session_id)
    prompts = REWINDABLE[session_id]
    sessions_import(roots=[sessions])
    old = path.read_bytes()

    rewound = session_rewind(session=Session.objects.get(session_id=session_id), turn=turn)

    # Resumed in a copy of this home (codex appends to what it resumes; the undo comes next).
    copy = CliHome(home=tmp_path / "copy", cwd=tmp_path / "copy" / "project")
    shutil.copytree(home.home, copy.home)
    assert not list(codex_home(copy.home).glob("state_*.sqlite"))
    run = run_codex(copy.home, copy.cwd, fake_model, ["resume", session_id, "next"])
    assert run.session_id == session_id  # found by its id
    assert _sent(fake_model) == [*prompts[: turn - 1], "next"]

    session_rewind_undo(session=rewound)

    assert path.read_bytes() == old
    run = run_codex(home.home, home.cwd, fake_model, ["resume", session_id, "next"])
    assert run.session_id == session_id
    assert _sent(fake_model) == [*prompts, "next"]


@pytest.mark.parametrize("undone", [False, True], ids=["rewound", "undone"])
@pytest.mark.parametrize("session_id", sorted(REWINDABLE))
def test_after_codex_resumed_it_once_it_resumes_the_rewind_and_the_undo(
    codex_cli: Path,
    fake_model: FakeModel,
    tmp_path: Path,
    settings,
    session_id: str,
    undone: bool,
) -> None:
    # (b) codex resumed the session once: state_5.sqlite and thread_history_*.sqlite hold
    # a row and history for it. What branchboard leaves in the file must still be what the
    # next resume sends, not the history codex keeps in its databases.
    home, sessions, path = _home(tmp_path, settings, session_id)
    prompts = [*REWINDABLE[session_id], "before the rewind"]
    run_codex(home.home, home.cwd, fake_model, ["resume", session_id, "before the rewind"])
    assert _sent(fake_model) == prompts
    assert list(codex_home(home.home).glob("state_*.sqlite"))
    assert list(codex_home(home.home).glob("thread_history_*.sqlite"))
    _idle(path)
    sessions_import(roots=[sessions])
    resumed = path.read_bytes()

    rewound = session_rewind(session=Session.objects.get(session_id=session_id), turn=3)
    if undone:
        session_rewind_undo(session=rewound)
        assert path.read_bytes() == resumed

    run = run_codex(home.home, home.cwd, fake_model, ["resume", session_id, "next"])

    assert run.session_id == session_id
    assert _sent(fake_model) == [*(prompts if undone else prompts[:2]), "next"]
    # The backup is a session of its own that codex resumes with every old prompt.
    backup_id = str(Session.objects.get(kind=Session.Kind.REWIND_BACKUP).session_id)
    run = run_codex(home.home, home.cwd, fake_model, ["resume", backup_id, "in the backup"])
    assert run.session_id == backup_id
    assert _sent(fake_model) == [*prompts, "in the backup"]
