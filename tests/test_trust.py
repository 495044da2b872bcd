"""The index never drifts from the files: rewind, undo and fork in any order write whole lines."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session

from .conftest import ALL_ROOTS, CLAUDE_ROOTS
from .facts import TURNS
from .index_check import fresh_import_facts, index_facts, unparseable_lines

pytestmark = pytest.mark.django_db

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
CLAUDE_SESSIONS = sorted(
    path for path, turns in TURNS.items() if path.startswith(CLAUDE_ROOTS) and turns >= 3
)


def run(*args: str) -> dict:
    out = io.StringIO()
    call_command(*args, "--json", stdout=out)
    return orjson.loads(out.getvalue())


def turns_of(path: Path) -> int:
    from .reading import analyse_file

    return analyse_file(path)[1].turn_count


def test_fork_after_rewind_and_undo_holds_whole_lines(imported: Path) -> None:
    """The issue's repro: rewind 2, undo, fork 1 gave a fork of 4 lines that are not JSON."""
    source = Session.objects.get(session_id=WEBAPP_ID)
    original = Path(source.path).read_bytes()
    run("rewind_session", WEBAPP_ID, "--turn", "2")
    run("rewind_session", WEBAPP_ID, "--undo")
    assert Path(source.path).read_bytes() == original
    fork = run("fork_session", WEBAPP_ID, "--turn", "1")
    assert unparseable_lines(Path(fork["path"])) == 0
    assert fork["turns"] == turns_of(Path(fork["path"])) == 1
    # The restored session has all its turns again, in the index too.
    fork2 = run("fork_session", WEBAPP_ID, "--turn", "2")
    assert turns_of(Path(fork2["path"])) == 2
    assert Session.objects.get(session_id=WEBAPP_ID).turn_count == 3


@pytest.mark.parametrize("relpath", CLAUDE_SESSIONS)
def test_sequence_of_actions_keeps_every_file_whole(imported: Path, relpath: str) -> None:
    """Rewind 2, undo, fork 1, branch, rewind T, fork T-1, undo, rewind 2 twice, undo, fork 1."""
    path = imported / relpath
    sid = path.stem
    turns = TURNS[relpath]
    bad_before = unparseable_lines(path)
    steps = [
        ("rewind_session", sid, "--turn", "2"),
        ("rewind_session", sid, "--undo"),
        ("fork_session", sid, "--turn", "1"),
        ("fork_session", sid),
        ("rewind_session", sid, "--turn", str(turns)),
        ("fork_session", sid, "--turn", str(turns - 1)),
        ("rewind_session", sid, "--undo"),
        ("rewind_session", sid, "--turn", "2"),
        ("rewind_session", sid, "--turn", "2"),  # now out of range: refused, not "busy"
        ("rewind_session", sid, "--undo"),
        ("fork_session", sid, "--turn", "1"),
    ]
    roots = [imported / r for r in ALL_ROOTS]
    for n, step in enumerate(steps):
        if n == 8:
            with pytest.raises(CommandError, match="has 1 turn"):
                run(*step)
        else:
            info = run(*step)
            if step[0] == "fork_session":
                new = Path(info["path"])
                assert unparseable_lines(new) == 0, step
                assert info["turns"] == turns_of(new), step
        assert unparseable_lines(path) == bad_before, step
        assert index_facts() == fresh_import_facts(roots), step
    assert Session.objects.get(session_id=sid).turn_count == turns


def test_rewinding_twice_in_a_row_is_not_refused_as_busy(imported: Path) -> None:
    """Our own rewind made the file "recently modified"; the busy guard is about a running CLI."""
    sid = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"
    run("rewind_session", sid, "--turn", "20")
    again = run("rewind_session", sid, "--turn", "5")
    assert again["turns"] == 4
    undone = run("rewind_session", sid, "--undo")
    assert undone["turns"] == 19


def test_a_file_written_by_someone_else_just_now_is_still_busy(imported: Path) -> None:
    sid = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"
    run("rewind_session", sid, "--turn", "20")
    path = Path(Session.objects.get(session_id=sid).path)
    with path.open("ab") as f:  # a CLI appends a line
        f.write(path.read_bytes().splitlines(keepends=True)[-1])
    from django.core.management import call_command as cc

    cc("import_sessions", "--root", str(path.parent.parent), stdout=io.StringIO())
    with pytest.raises(CommandError, match=r"written .* ago"):
        run("rewind_session", sid, "--turn", "5")
