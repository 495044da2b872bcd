"""Codex sessions with a second `session_meta` line are branched, forked and rewound (issue 42,
item 3): a sub-agent or resumed rollout replaying another thread, a session resumed in the
app. Codex reads a file's first `session_meta` as the thread and keeps the later ones as
items it sends nothing of, so the copy restamps them with the new id."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from sessions_app.models import Session
from sessions_app.services.branching import session_fork, session_rewind, session_rewind_undo
from sessions_app.services.importing import sessions_import

from .index_check import fresh_import_facts, index_facts

pytestmark = pytest.mark.django_db(transaction=True)

WILD = Path(__file__).parent / "fixtures/codex_wild/sessions"
CHILD = "019a0000-bbbb-7bbb-8bbb-00000000000b"  # own meta, then its parent's, replayed
DESKTOP = "019a0000-dddd-7ddd-8ddd-00000000000d"  # its own meta again when resumed
PROMPTS = {
    CHILD: ["explain the parser", "add a test for it", "review the parser change"],
    DESKTOP: ["first real prompt", "what is in this picture?\n"],
}
FORKS = [(sid, turn) for sid, prompts in PROMPTS.items() for turn in range(1, len(prompts) + 1)]


@pytest.fixture
def wild_root(tmp_path: Path, settings) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(WILD, root)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    return root


def _metas(path: Path) -> list[dict]:
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    return [x["payload"] for x in lines if x["type"] == "session_meta"]


@pytest.mark.parametrize(("session_id", "turn"), FORKS)
def test_a_session_with_a_second_session_meta_is_forked_at_any_turn(
    wild_root: Path, session_id: str, turn: int
) -> None:
    source = Session.objects.get(session_id=session_id)
    assert source.turn_count == len(PROMPTS[session_id])
    source_metas = _metas(Path(source.path))

    new = session_fork(session=source, turn=turn, include_turn=True)

    texts = list(new.records.turn_starts().order_by("line").values_list("text", flat=True))
    assert texts == PROMPTS[session_id][:turn]
    metas = _metas(Path(new.path))
    # Every session_meta names the fork; each keeps when its thread began.
    assert {m["id"] for m in metas} == {str(new.session_id)}
    kept = source_metas[: len(metas)]
    assert [m["timestamp"] for m in metas] == [m["timestamp"] for m in kept]
    assert index_facts() == fresh_import_facts([wild_root])


@pytest.mark.parametrize("session_id", sorted(PROMPTS))
def test_a_session_with_a_second_session_meta_is_rewound_and_undone(
    wild_root: Path, session_id: str
) -> None:
    source = Session.objects.get(session_id=session_id)
    old = Path(source.path).read_bytes()

    rewound = session_rewind(session=source, turn=2)

    assert rewound.turn_count == 1
    backup = Session.objects.get(kind=Session.Kind.REWIND_BACKUP)
    assert backup.turn_count == len(PROMPTS[session_id])
    assert {m["id"] for m in _metas(Path(backup.path))} == {str(backup.session_id)}
    session_rewind_undo(session=rewound)
    assert Path(source.path).read_bytes() == old
    assert index_facts() == fresh_import_facts([wild_root])
