"""Codex sessions from the wild in their right projects and lineage (issue 42, item 10)."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.rendering.splits import split_label
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures" / "codex_items" / "sessions"
PRE_ENVELOPE = "5e1f0c2a-4b7d-4c3e-9f10-2a3b4c5d6e7f"
WINDOWS = ("0199867a-1111-7222-8333-000000000001", "0199867a-1111-7222-8333-000000000002")


@pytest.fixture
def root(tmp_path: Path, settings) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES, root)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    return root


def test_a_pre_envelope_session_takes_its_project_from_its_environment_context(
    root: Path,
) -> None:
    session = Session.objects.get(session_id=PRE_ENVELOPE)

    assert session.cwd == "/workspaces/preenvelope_demo"
    assert session.project.path == "/workspaces/preenvelope_demo"
    assert "unknown" not in session.project.folder
    assert session.turn_count == 1


def test_a_windows_drive_letter_in_either_case_is_one_project(root: Path) -> None:
    projects = {Session.objects.get(session_id=sid).project_id for sid in WINDOWS}

    assert len(projects) == 1


PARENT = "019a57b1-0000-7000-8000-000000000001"
BACKTRACK = "019a58d2-0000-7000-8000-000000000002"
SPAWNED = "019e1c6f-0000-7000-8000-000000000003"


def test_a_backtrack_fork_is_linked_to_its_parent_where_it_split(root: Path) -> None:
    # The import reads the newest files first: the children before their parent, so this
    # is the link made once the parent is in.
    fork = Session.objects.get(session_id=BACKTRACK)

    assert fork.parent is not None and str(fork.parent.session_id) == PARENT
    assert fork.turn_count == 3
    assert split_label(fork) == "after turn 2"


def test_a_sub_agent_forked_with_its_parents_history_splits_after_those_turns(
    root: Path,
) -> None:
    spawned = Session.objects.get(session_id=SPAWNED)

    assert spawned.parent is not None and str(spawned.parent.session_id) == PARENT
    assert split_label(spawned) == "after turn 3"


def test_codex_branches_are_titled_branch_n_like_the_other_agents(root: Path) -> None:
    from sessions_app.services.branching import session_fork

    source = Session.objects.get(session_id=PARENT)

    first = session_fork(session=source, turn=2, include_turn=True)
    second = session_fork(session=source, turn=None, include_turn=True)
    named = session_fork(session=source, turn=1, include_turn=True, title="my own name")

    assert first.title == "lineage prompt one (Branch)"
    assert second.title == "lineage prompt one (Branch 2)"
    assert named.title == "my own name"
    # Kept when the file is read again after `codex resume` appended to it.
    with open(first.path, "ab") as f:
        f.write(
            b'{"timestamp":"2026-07-21T10:00:00.000Z","type":"response_item","payload":'
            b'{"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]}}\n'
        )
    sessions_import(roots=[root])
    first.refresh_from_db()
    assert first.turn_count == 3 and first.title == "lineage prompt one (Branch)"


def test_subagent_hits_are_grouped_under_a_real_title(tmp_path: Path, settings, client) -> None:
    from sessions_app.services.searching import search_refresh

    root = tmp_path / "projects"
    shutil.copytree(Path(__file__).parent / "fixtures/cli/claude/-home-dev-code-agents", root / "p")
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    search_refresh()
    owner = Session.objects.get(
        session_id="04fa9149-8141-4f34-8bc2-f6d11b8fa354", is_subagent=False
    )

    page = client.get("/search/", {"q": '"List files and report"'}).content.decode()

    headings = re.findall(r'<section class="search-group">\s*<h2><a [^>]*>(.*?)</a>', page)
    assert "(untitled)" not in headings
    assert any(h.startswith("Subagent") and owner.title[:30] in html.unescape(h) for h in headings)
