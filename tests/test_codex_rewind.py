"""Codex sessions rewound in place the way Claude's are (issue 29): the whole old file saved
first as a backup session (a new rollout, like a branch), then the file cut before turn N
through a temporary file renamed over it; undo gives back every byte."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from sessions_app.formats import agent_for
from sessions_app.models import Session
from sessions_app.services.branching import (
    BranchingUnsupported,
    InvalidTurn,
    NothingToUndo,
    SourceChanged,
    session_fork,
    session_rewind,
    session_rewind_undo,
)
from sessions_app.services.importing import sessions_import

from .facts import CODEX_PROMPTS
from .index_check import fresh_import_facts, index_facts

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures"
CLI = FIXTURES / "cli/codex/sessions"
SYNTHETIC = FIXTURES / "synthetic/codex/sessions"
# Every Codex fixture whose file is its whole history, with its prompts by turn.
REWINDABLE = {sid: (FIXTURES / folder, prompts) for sid, (folder, prompts) in CODEX_PROMPTS.items()}
REWINDS = [
    (sid, turn)
    for sid, (_, prompts) in sorted(REWINDABLE.items())
    for turn in range(2, len(prompts) + 1)
]


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _alone(tmp_path: Path, settings, session_id: str) -> tuple[Path, Path]:
    """A session root holding only this fixture's file, imported: (root, file)."""
    fixtures = REWINDABLE[session_id][0]
    (source,) = fixtures.rglob(f"rollout-*-{session_id}.jsonl")
    root = tmp_path / "sessions"
    copy = root / source.relative_to(fixtures)
    copy.parent.mkdir(parents=True)
    shutil.copy2(source, copy)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    return root, copy


@pytest.mark.parametrize(("session_id", "turn"), REWINDS)
def test_rewind_backs_up_the_old_file_cuts_before_the_turn_and_undo_restores_it(
    tmp_path: Path, settings, session_id: str, turn: int
) -> None:
    root, path = _alone(tmp_path, settings, session_id)
    prompts = REWINDABLE[session_id][1]
    old = path.read_bytes()
    session = Session.objects.get(session_id=session_id)
    # Where an edit & fork before the turn cuts (checked against the real codex), then gone.
    fork = session_fork(session=session, turn=turn, include_turn=False)
    kept_lines = Path(fork.path).read_bytes().splitlines(keepends=True)[1:]
    Path(fork.path).unlink()
    fork.delete()

    rewound = session_rewind(session=Session.objects.get(session_id=session_id), turn=turn)

    # The file: the same session, its first line unchanged, cut where a fork before N cuts.
    now = path.read_bytes()
    assert now.splitlines(keepends=True) == [old.splitlines(keepends=True)[0], *kept_lines]
    assert old.startswith(now)
    assert rewound.turn_count == turn - 1 and str(rewound.session_id) == session_id
    texts = list(rewound.records.turn_starts().order_by("line").values_list("text", flat=True))
    assert texts == prompts[: turn - 1]
    # The backup: every old line under its own session_meta, a new rollout beside it.
    backup = Session.objects.get(kind=Session.Kind.REWIND_BACKUP)
    backup_path = Path(backup.path)
    assert set(_files(root)) == {path, backup_path}
    assert backup_path.parent.parent.parent.parent == root
    assert backup_path.stem.endswith(str(backup.session_id))
    assert backup.parent_id == rewound.pk and backup.fork_turn == turn
    assert backup.turn_count == len(prompts)
    lines = backup_path.read_bytes().splitlines(keepends=True)
    assert b"".join([old.splitlines(keepends=True)[0], *lines[1:]]) == old
    meta = orjson.loads(lines[0])["payload"]
    assert meta["id"] == str(backup.session_id) and meta["forked_from_id"] == session_id
    assert index_facts() == fresh_import_facts([root])

    restored = session_rewind_undo(session=rewound)

    assert path.read_bytes() == old
    assert restored.turn_count == len(prompts) and restored.rewind_undo == {}
    assert backup_path.read_bytes() == b"".join(lines)  # the backup stays, a session of its own
    assert index_facts() == fresh_import_facts([root])


def test_undo_is_refused_once_the_cli_wrote_to_the_rewound_file(tmp_path: Path, settings) -> None:
    root, path = _alone(tmp_path, settings, "01a21760-a9c0-7191-881d-5cbb883febdf")
    rewound = session_rewind(
        session=Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf"), turn=2
    )
    with path.open("ab") as f:  # codex resumed it and appended a turn
        f.write(path.read_bytes().splitlines(keepends=True)[-1])
    before = _files(root)

    with pytest.raises(SourceChanged, match="backup session"):
        session_rewind_undo(session=rewound)

    assert _files(root) == before


def test_undo_twice_is_refused(tmp_path: Path, settings) -> None:
    root, _ = _alone(tmp_path, settings, "01a21766-de59-75e3-9552-c2130690b4b1")
    session = Session.objects.get(session_id="01a21766-de59-75e3-9552-c2130690b4b1")
    rewound = session_rewind(session=session, turn=3)
    session_rewind_undo(session=rewound)
    before = _files(root)

    with pytest.raises(NothingToUndo):
        session_rewind_undo(session=Session.objects.get(pk=rewound.pk))

    assert _files(root) == before


def test_an_edited_backup_is_not_used_to_undo(tmp_path: Path, settings) -> None:
    _, path = _alone(tmp_path, settings, "01a21760-ac42-7d62-8bb2-5e68454e4bcc")
    session = Session.objects.get(session_id="01a21760-ac42-7d62-8bb2-5e68454e4bcc")
    rewound = session_rewind(session=session, turn=2)
    backup = Path(Session.objects.get(kind=Session.Kind.REWIND_BACKUP).path)
    backup.write_bytes(backup.read_bytes().replace(b"after the interrupt", b"after THE interrupt"))
    cut = path.read_bytes()

    with pytest.raises(SourceChanged, match="does not rebuild"):
        session_rewind_undo(session=rewound)

    assert path.read_bytes() == cut


def test_an_undo_whose_backup_was_rewound_since_is_refused_and_both_undo_in_turn(
    tmp_path: Path, settings
) -> None:
    """The hub's property test met this: the backup is a session of its own, so it can be
    rewound too; the first rewind's undo then cannot rebuild the old file from it and is
    refused, nothing changed, until the backup's own rewind is undone."""
    root, path = _alone(tmp_path, settings, "01a21760-a9c0-7191-881d-5cbb883febdf")
    old = path.read_bytes()
    rewound = session_rewind(
        session=Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf"), turn=3
    )
    backup = Session.objects.get(kind=Session.Kind.REWIND_BACKUP)
    backup_bytes = Path(backup.path).read_bytes()
    backup_rewound = session_rewind(session=backup, turn=2)
    before = _files(root)

    with pytest.raises(SourceChanged, match="does not rebuild"):
        session_rewind_undo(session=Session.objects.get(pk=rewound.pk))

    assert _files(root) == before
    session_rewind_undo(session=Session.objects.get(pk=backup_rewound.pk))
    assert Path(backup.path).read_bytes() == backup_bytes
    session_rewind_undo(session=Session.objects.get(pk=rewound.pk))
    assert path.read_bytes() == old
    assert index_facts() == fresh_import_facts([root])


def test_rewind_to_turn_one_or_past_the_end_is_refused(tmp_path: Path, settings) -> None:
    root, _ = _alone(tmp_path, settings, "01a21760-a9c0-7191-881d-5cbb883febdf")
    session = Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf")
    before = _files(root)

    for turn in (1, 4):
        with pytest.raises(InvalidTurn):
            session_rewind(session=session, turn=turn)

    assert _files(root) == before


@pytest.fixture
def codex_root(tmp_path: Path, settings) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(CLI, root)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    return root


@pytest.mark.parametrize(
    ("session_id", "reason"),
    [
        # Codex's own fork of it (no copy: a history_base into this file's bytes).
        ("01a21760-a9c0-7191-881d-5cbb883febdf", "continues the history"),
        # Codex's own rollback segment continues this thread from this file's bytes.
        ("01a21766-d893-7641-a0b8-5e71d683dc54", "continues the history"),
    ],
)
def test_a_file_another_file_reads_into_is_not_rewound(
    codex_root: Path, session_id: str, reason: str
) -> None:
    session = Session.objects.get(session_id=session_id)
    before = _files(codex_root)
    count = Session.objects.count()

    with pytest.raises(BranchingUnsupported, match=reason):
        session_rewind(session=session, turn=2)

    assert _files(codex_root) == before and Session.objects.count() == count


def test_a_file_whose_history_starts_in_another_file_is_not_rewound(codex_root: Path) -> None:
    # Codex's rollback segment: its history starts with the first file's first two turns.
    session = Session.objects.get(session_id="01a21766-dc52-7f20-bfbb-04c2731abefd")
    path = Path(session.path)
    # A second turn of its own, appended as codex would, so that turn 2 is in range.
    lines = path.read_bytes().splitlines(keepends=True)
    with path.open("ab") as f:
        f.writelines(lines[1:])
    os.utime(path, (1_700_000_000, 1_700_000_000))  # idle, as codex left it long ago
    sessions_import(roots=[codex_root])
    session = Session.objects.get(pk=session.pk)
    assert session.turn_count == 2
    before = _files(codex_root)

    with pytest.raises(BranchingUnsupported, match="history_base"):
        session_rewind(session=session, turn=2)

    assert _files(codex_root) == before


def test_codex_offers_rewind() -> None:
    assert agent_for("codex").can_rewind is True
    assert agent_for("codex").rewinds_by_appending is False
