"""Gemini CLI reading beyond one plain 0.61 JSONL file (issue 45): `$set.messages`
replays, sub-agent chats, and files beside the chats that are no sessions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.formats import PROMPT
from sessions_app.models import Record, Session
from sessions_app.services.branching import session_fork
from sessions_app.services.discovery import discover
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

HOME = Path(__file__).parent / "fixtures" / "gemini_read"
RESUMED = "3c4d5e6f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
SUBAGENT = "7a8b9c0d-2e3f-4a5b-9c6d-7e8f9a0b1c2d"
RESUMED_NAME = "session-2026-12-01T10-00-3c4d5e6f.jsonl"
# Counted by hand, by the CLI's replay (`loadConversationRecord`, 0.61): line 6's
# `$set.messages` keeps "first question" and its answer only; then "third question", and
# "second question again" under the id `$set` dropped, which the CLI adds at the end.
RESUMED_PROMPTS = [
    ("first question", True, 1),
    ("second question", False, None),
    ("third question", True, 2),
    ("second question again", True, 3),
]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / ".gemini"
    shutil.copytree(HOME, home)
    return home


def _import(tmp_path: Path) -> Path:
    home = _home(tmp_path)
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors, report.errors
    return home


def test_set_messages_replaces_the_whole_history_as_the_cli_replays_it(tmp_path: Path) -> None:
    home = _import(tmp_path)
    session = Session.objects.get(session_id=RESUMED, is_subagent=False)

    assert session.turn_count == 3
    prompts = Record.objects.filter(session=session, kind=PROMPT).order_by("line")
    assert [(r.text, r.active, r.turn) for r in prompts] == RESUMED_PROMPTS
    # One Record row per line stays; the `$set` line hangs off the last message it keeps.
    lines = (home / "tmp/resumed/chats" / RESUMED_NAME).read_bytes().splitlines()
    assert Record.objects.filter(session=session).count() == len(lines)
    replaced = Record.objects.get(session=session, line=6)
    assert replaced.parent_uuid == Record.objects.get(session=session, line=3).uuid
    uuids = list(Record.objects.filter(session=session).values_list("uuid", flat=True))
    assert len(set(uuids)) == len(uuids)  # the dropped id, recorded again, is a new uuid


def test_set_messages_on_an_append_replays_the_same(tmp_path: Path) -> None:
    home = _home(tmp_path)
    path = home / "tmp/resumed/chats" / RESUMED_NAME
    whole = path.read_bytes()
    head = whole.splitlines(keepends=True)
    path.write_bytes(b"".join(head[:6]))  # before the resume
    sessions_import(roots=[home / "tmp"])
    path.write_bytes(whole)

    report = sessions_import(roots=[home / "tmp"])

    assert not report.errors, report.errors
    session = Session.objects.get(session_id=RESUMED, is_subagent=False)
    prompts = Record.objects.filter(session=session, kind=PROMPT).order_by("line")
    assert [(r.text, r.active, r.turn) for r in prompts] == RESUMED_PROMPTS


def test_subagent_chats_are_subagents_of_their_parent_session(tmp_path: Path) -> None:
    _import(tmp_path)

    main = Session.objects.get(is_subagent=False, session_id=RESUMED)
    sub = Session.objects.get(is_subagent=True)
    assert str(sub.owner_session_id) == RESUMED
    assert sub.project_id == main.project_id
    assert Session.objects.filter(is_subagent=False).count() == 1  # never a session of its own
    assert sub.turn_count == 1  # "Investigate the build"
    assert Record.objects.filter(session=sub).count() == 4


def test_discovery_takes_chats_and_subagent_chats_and_nothing_else(tmp_path: Path) -> None:
    home = _home(tmp_path)

    files, problems, misnamed = discover(home / "tmp")

    found = {(f.path.name, f.session_id, f.owner_session_id) for f in files}
    assert found == {
        (RESUMED_NAME, RESUMED, None),
        (f"{SUBAGENT}.jsonl", None, RESUMED),
    }
    # `/chat save` checkpoints (a quoted tag too), `logs.json` and `checkpoints/` restore
    # files are none of the chats: not sessions, not even misnamed ones.
    assert misnamed == [] and problems == []


SAME_MINUTE = Path(__file__).parent / "fixtures" / "gemini_same_minute"
SAME_MINUTE_ID = "dc0edc3c-af6b-4f5e-9552-4776a47da969"


def test_a_resume_in_the_same_minute_keeps_the_history_it_lists_again(tmp_path: Path) -> None:
    """Written by the real gemini 0.61.0 ("alpha one", then `--resume latest` "bravo two"
    in the same minute): the resume's first lines join the file, a second metadata line and
    `$set.messages` of the context alone, then the whole history again. The CLI replays
    both prompts; so must the chain (main's reader lost "alpha one"), and a fork of it
    reads back whole."""
    home = tmp_path / ".gemini"
    shutil.copytree(SAME_MINUTE, home)
    assert not sessions_import(roots=[home / "tmp"]).errors
    session = Session.objects.get(session_id=SAME_MINUTE_ID)

    prompts = Record.objects.filter(session=session, kind=PROMPT, active=True).order_by("line")
    assert [(r.text, r.turn) for r in prompts] == [("alpha one", 1), ("bravo two", 2)]
    assert session.turn_count == 2

    fork = session_fork(session=session, turn=1)
    assert fork.turn_count == 1
