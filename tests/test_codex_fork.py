"""Codex sessions branched, forked from a turn and forked before one (edit & fork): the new
rollout is the source's first lines unchanged under a new `session_meta` line (issue 29)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command

from sessions_app.formats import agent_for, is_session_id
from sessions_app.models import Session
from sessions_app.services.branching import (
    BranchingUnsupported,
    InvalidTurn,
    session_fork,
)
from sessions_app.services.importing import sessions_import

from .facts import CODEX_PROMPTS
from .index_check import fresh_import_facts, index_facts

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures"
CLI = FIXTURES / "cli/codex/sessions"
SYNTHETIC = FIXTURES / "synthetic/codex/sessions"
# Every Codex fixture a copy of its own file can carry on, with its prompts by turn.
FORKABLE = {sid: (FIXTURES / folder, prompts) for sid, (folder, prompts) in CODEX_PROMPTS.items()}
# Files that continue history kept in another file (`history_base`): a copy would lose it.
CONTINUATIONS = ["01a21760-ae74-71f1-9af0-3a9c6ff18f96", "01a21766-dc52-7f20-bfbb-04c2731abefd"]
# (session, turn, include the turn): every fork and edit & fork each session offers.
ACTIONS = [
    (sid, turn, include)
    for sid, (_, prompts) in sorted(FORKABLE.items())
    for turn in range(1, len(prompts) + 1)
    for include in (True, False)
    if include or turn > 1
]


@pytest.fixture
def codex_root(tmp_path: Path, settings) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(CLI, root)
    shutil.copytree(SYNTHETIC, root, dirs_exist_ok=True)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    return root


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _source_file(root: Path, session_id: str) -> Path:
    (found,) = root.rglob(f"rollout-*-{session_id}.jsonl")
    return found


def _check_fork(root: Path, source: Session, new: Session, turns: int, before: dict) -> None:
    """The fork's file is the source's first lines under a new first line; nothing else moved."""
    after = _files(root)
    new_path, new_id, source_id = Path(new.path), str(new.session_id), str(source.session_id)
    assert {p: b for p, b in after.items() if p != new_path} == before  # sources untouched
    assert new_path.parent.parent.parent.parent == root  # sessions/YYYY/MM/DD/
    assert new_path.name.startswith("rollout-") and new_path.stem.endswith(new_id)
    assert agent_for("codex").session_id_of(new_path) == new_id
    assert new_path.stat().st_mode & 0o777 == 0o600
    lines = new_path.read_bytes().splitlines(keepends=True)
    source_lines = Path(source.path).read_bytes().splitlines(keepends=True)
    assert lines[1:] == source_lines[1 : len(lines)]  # copied unchanged, ordinals and all
    meta = orjson.loads(lines[0])
    source_meta = orjson.loads(source_lines[0])
    assert meta["type"] == "session_meta"
    payload = meta["payload"]
    assert payload["id"] == payload.get("session_id", new_id) == new_id
    assert payload["forked_from_id"] == source_id
    assert payload["forked_from_ordinal_exclusive"] == len(lines)
    assert "history_base" not in payload
    own = ("id", "session_id", "timestamp", "forked_from_id", "forked_from_ordinal_exclusive")
    same = {k: v for k, v in payload.items() if k not in own}
    assert same == {k: v for k, v in source_meta["payload"].items() if k not in own}
    # A UUIDv7 like Codex's own thread ids.
    assert is_session_id(new_id) and new_id[14] == "7"
    assert new.turn_count == turns and new.parent_id == source.pk
    assert new.agent == "codex" and new.project_id == source.project_id
    assert index_facts() == fresh_import_facts([root])


@pytest.mark.parametrize(("session_id", "turn", "include"), ACTIONS)
def test_a_fork_is_the_sources_first_lines_under_a_new_session_meta(
    codex_root: Path, session_id: str, turn: int, include: bool
) -> None:
    prompts = FORKABLE[session_id][1]
    source = Session.objects.get(session_id=session_id)
    before = _files(codex_root)

    new = session_fork(session=source, turn=turn, include_turn=include)

    kept = turn if include else turn - 1
    _check_fork(codex_root, source, new, kept, before)
    assert new.kind == (Session.Kind.FORK if include else Session.Kind.FORK_BEFORE)
    texts = list(new.records.turn_starts().order_by("line").values_list("text", flat=True))
    assert texts == prompts[:kept]
    # Nothing of the next turn: the file ends before the record that opens it.
    last = orjson.loads(Path(new.path).read_bytes().splitlines()[-1])
    assert last["payload"].get("type") != "task_started" and last["type"] != "turn_context"


@pytest.mark.parametrize("session_id", sorted(FORKABLE))
def test_a_branch_copies_the_whole_session(codex_root: Path, session_id: str) -> None:
    source = Session.objects.get(session_id=session_id)
    before = _files(codex_root)

    new = session_fork(session=source)

    _check_fork(codex_root, source, new, source.turn_count, before)
    assert new.kind == Session.Kind.BRANCH
    assert len(Path(new.path).read_bytes().splitlines()) == source.line_count


def test_the_cut_lies_before_the_records_that_open_the_next_turn(codex_root: Path) -> None:
    # Where codex's own thread/revert cuts: before the next turn's task_started (line 35 of
    # this file; its turn_context follows, then prompt 3 on line 37).
    source = Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf")

    new = session_fork(session=source, turn=2)

    lines = Path(new.path).read_bytes().splitlines()
    assert len(lines) == 35
    assert orjson.loads(lines[-1])["payload"]["type"] == "thread_settings_applied"


def test_a_fork_before_a_rolled_back_prompt_leaves_it_out(codex_root: Path) -> None:
    source = Session.objects.get(session_id="0199aa00-1111-7222-8333-944455556666")

    new = session_fork(session=source, turn=1)

    assert b"later rolled back" not in Path(new.path).read_bytes()
    assert new.turn_count == 1 and not new.abandoned


@pytest.mark.parametrize("session_id", CONTINUATIONS)
def test_a_file_continuing_another_files_history_is_not_forked(
    codex_root: Path, session_id: str
) -> None:
    source = Session.objects.get(session_id=session_id)
    before = _files(codex_root)

    with pytest.raises(BranchingUnsupported, match="history"):
        session_fork(session=source, turn=1)

    assert _files(codex_root) == before and Session.objects.count() == len(before)


def test_edit_and_fork_of_turn_one_and_a_turn_out_of_range_are_refused(codex_root: Path) -> None:
    source = Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf")
    before = _files(codex_root)

    with pytest.raises(InvalidTurn):
        session_fork(session=source, turn=1, include_turn=False)
    with pytest.raises(InvalidTurn):
        session_fork(session=source, turn=4)

    assert _files(codex_root) == before


def test_a_fork_of_a_fork_names_its_own_parent(codex_root: Path) -> None:
    source = Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf")
    first = session_fork(session=source, turn=2)
    before = _files(codex_root)

    second = session_fork(session=first, turn=1)

    _check_fork(codex_root, first, second, 1, before)


def test_the_fork_command_makes_a_codex_fork(codex_root: Path) -> None:
    out = io.StringIO()
    before = set(Session.objects.values_list("pk", flat=True))

    call_command("fork_session", "01a21760-a9c0-7191-881d-5cbb883febdf", "--turn", "2", stdout=out)

    new = Session.objects.exclude(pk__in=before).get()
    assert str(new.session_id) in out.getvalue() and new.turn_count == 2
