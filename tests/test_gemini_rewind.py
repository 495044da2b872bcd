"""Gemini CLI rewind and undo: the CLI's own `$rewindTo` appended, taken back by the undo
(issue 45). The real CLI resumes the result: tests/compat/test_gemini_rewind_compat.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from sessions_app.formats import PROMPT, agent_for
from sessions_app.models import Record, Session
from sessions_app.services.branching import (
    SourceChanged,
    session_fork,
    session_rewind,
    session_rewind_undo,
)
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

HOME = Path(__file__).parent / "fixtures" / "gemini"
DEMO = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
SOURCE = "tmp/demo-app/chats/session-2026-11-20T10-00-1a2b3c4d.jsonl"
# The fixture's turns, counted by hand (tests/test_gemini.py): its prompts' message ids.
PROMPTS = ["list the files", "explain setup.py", "make it longer"]


def _imported(tmp_path: Path) -> tuple[Session, Path]:
    home = tmp_path / ".gemini"
    shutil.copytree(HOME, home)
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors, report.errors
    return Session.objects.get(session_id=DEMO), home / SOURCE


def _active_prompts(session: Session) -> list[str]:
    rows = Record.objects.filter(session=session, kind=PROMPT, active=True).order_by("line")
    return list(rows.values_list("text", flat=True))


def test_gemini_offers_rewind_by_its_own_marker() -> None:
    gemini = agent_for("gemini")
    assert gemini.can_rewind and gemini.rewinds_by_appending and gemini.undo_truncates


@pytest.mark.parametrize("turn", [2, 3])
def test_a_rewind_appends_one_rewind_to_the_turns_prompt_and_keeps_every_byte(
    tmp_path: Path, turn: int
) -> None:
    session, path = _imported(tmp_path)
    before = path.read_bytes()
    prompt_id = (
        Record.objects.filter(session=session, active=True, turn=turn, starts_turn=True)
        .values_list("uuid", flat=True)
        .get()
    )

    rewound = session_rewind(session=session, turn=turn)

    after = path.read_bytes()
    assert after.startswith(before)  # nothing of the user's file is rewritten
    assert orjson.loads(after[len(before) :]) == {"$rewindTo": prompt_id.split("@")[0]}
    assert after.count(b"\n") == before.count(b"\n") + 1
    assert rewound.turn_count == turn - 1
    assert _active_prompts(rewound) == PROMPTS[: turn - 1]
    # No backup session: the file itself keeps the dropped turns.
    assert Session.objects.filter(parent=session).count() == 0


def test_the_undo_takes_the_rewind_line_back_and_the_file_is_the_old_one_byte_for_byte(
    tmp_path: Path,
) -> None:
    session, path = _imported(tmp_path)
    before = path.read_bytes()
    rewound = session_rewind(session=session, turn=2)

    restored = session_rewind_undo(session=rewound)

    assert path.read_bytes() == before
    assert restored.turn_count == 3 and _active_prompts(restored) == PROMPTS
    assert restored.rewind_undo == {}


def test_an_undo_after_the_file_changed_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    session, path = _imported(tmp_path)
    rewound = session_rewind(session=session, turn=2)
    with path.open("ab") as f:  # the CLI went on in the file
        f.write(orjson.dumps({"id": "later-1", "type": "user", "content": "go on"}) + b"\n")
    changed = path.read_bytes()
    os.utime(path, ns=(rewound.rewind_undo["mtime_ns"] + 10**9,) * 2)

    with pytest.raises(SourceChanged):
        session_rewind_undo(session=Session.objects.get(pk=session.pk))

    assert path.read_bytes() == changed


def test_a_fork_of_a_rewound_session_keeps_the_turns_before_the_rewind(tmp_path: Path) -> None:
    session, _ = _imported(tmp_path)
    rewound = session_rewind(session=session, turn=3)

    branch = session_fork(session=rewound, turn=None)

    assert branch.turn_count == 2 and _active_prompts(branch) == PROMPTS[:2]
