"""A Codex `thread_spawn` sub-agent that copied none of its parent's history (no
`forked_from_id`) is linked to the session that spawned it (issue 42, item 10)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures"
SPAWN = FIXTURES / "codex_spawn/sessions"
PARENT_FILE = "2025/11/06/rollout-2025-11-06T14-44-03-019a57b1-0000-7000-8000-000000000001.jsonl"
PARENT = "019a57b1-0000-7000-8000-000000000001"
SPAWNED = ("019a5c00-0000-7000-8000-000000000005", "019a5c05-0000-7000-8000-000000000006")


def _add_parent(root: Path) -> None:
    target = root / PARENT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(FIXTURES / "codex_items/sessions" / PARENT_FILE, target)


def _linked() -> dict[str, str | None]:
    return {
        sid: (
            str(s.parent.session_id) if (s := Session.objects.get(session_id=sid)).parent else None
        )
        for sid in SPAWNED
    }


def test_a_spawned_sub_agent_is_linked_to_the_thread_that_spawned_it(
    tmp_path: Path, settings
) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(SPAWN, root)
    _add_parent(root)
    settings.SESSION_ROOTS = [root]

    sessions_import(roots=[root])

    assert _linked() == dict.fromkeys(SPAWNED, PARENT)
    for sid in SPAWNED:
        spawned = Session.objects.get(session_id=sid)
        assert spawned.turn_count == 1  # the task its parent sent: none of the parent's turns
        assert spawned.kind == Session.Kind.BRANCH


def test_a_sub_agent_written_after_its_parent_was_imported_is_linked_to_it(
    tmp_path: Path, settings
) -> None:
    # As the watcher sees it: the parent's file first, the sub-agent's later.
    root = tmp_path / "sessions"
    _add_parent(root)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    shutil.copytree(SPAWN, root, dirs_exist_ok=True)

    sessions_import(roots=[root])

    assert _linked() == dict.fromkeys(SPAWNED, PARENT)
