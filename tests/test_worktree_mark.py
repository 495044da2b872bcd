"""The dashboard's ownership mark lives in git's admin folder of the worktree (issue 41 item 15).

A file in the checkout can come from a commit: a repository that commits
`.branchboard-worktree.json` must not make a hand-made worktree removable without
the user's word that it is someone else's. Worktrees an earlier version made (mark
in the checkout only) still count when that file is untracked.
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from sessions_app.formats.worktrees import ADMIN_MARKER, MARKER
from sessions_app.models import Session
from sessions_app.selectors.worktrees import project_worktrees
from sessions_app.services.worktrees import NeedsConfirmation, worktree_fork, worktree_remove

from .test_worktrees import claude_session, make_repo, run

pytestmark = pytest.mark.django_db

FORGED = orjson.dumps({"tool": "branchboard", "branch": "hand-made", "base": "main"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "code" / "app")


@pytest.fixture
def source(repo: Path, tmp_path: Path) -> Session:
    return claude_session(tmp_path / "claude-projects", repo)


def admin_folder(worktree: Path) -> Path:
    """git's own folder for the worktree (`<repo>/.git/worktrees/<name>`)."""
    return Path(run("rev-parse", "--path-format=absolute", "--git-dir", cwd=worktree))


def hand_made(repo: Path, slug: str, branch: str) -> Path:
    path = repo / ".claude" / "worktrees" / slug
    run("worktree", "add", "-q", "-b", branch, str(path), cwd=repo)
    return path


def branches(repo: Path) -> set[str]:
    return set(run("branch", "--format=%(refname:short)", cwd=repo).split())


def test_a_committed_marker_makes_a_hand_made_worktree_no_ours(
    client: Client, source: Session, repo: Path
) -> None:
    (repo / MARKER).write_bytes(FORGED)
    run("add", MARKER, cwd=repo)
    run("commit", "-qm", "a marker in the history", cwd=repo)
    path = hand_made(repo, "forged", "hand-made")
    assert orjson.loads((path / MARKER).read_bytes())["tool"] == "branchboard"

    with pytest.raises(NeedsConfirmation, match="not made by branchboard"):
        worktree_remove(path)
    with pytest.raises(CommandError, match="not made by branchboard"):
        call_command("worktree_remove", str(path), stdout=io.StringIO())
    refused = client.post(
        f"/projects/{source.project_id}/worktrees/remove/", {"path": str(path)}, follow=True
    ).content.decode()
    assert "not made by branchboard" in refused
    assert path.is_dir() and "hand-made" in branches(repo)
    (row,) = [r for r in project_worktrees(source.project) if r.path == path]
    assert not row.owned and not row.base  # the forged file's `base` is not shown either

    worktree_remove(path, foreign=True)
    assert not path.exists()


def test_the_mark_is_written_into_gits_admin_folder_not_the_checkout(
    source: Session, repo: Path
) -> None:
    made = worktree_fork(session=source, slug="ours")
    path = made.plan.path
    assert not (path / MARKER).exists()
    mark = orjson.loads((admin_folder(path) / ADMIN_MARKER).read_bytes())
    assert mark["tool"] == "branchboard" and mark["branch"] == "worktree-ours"
    assert mark["session_id"] == str(made.session.session_id)
    assert run("status", "--porcelain", "--untracked-files=all", "--ignored", cwd=path) == ""
    (row,) = [r for r in project_worktrees(source.project) if r.path == path]
    assert row.owned and row.base == "main"

    removal = worktree_remove(path)
    assert not path.exists() and removal.branch_deleted
    assert "worktree-ours" not in branches(repo)


def test_an_earlier_versions_untracked_marker_still_counts(source: Session, repo: Path) -> None:
    # What an earlier version left: the mark in the checkout, kept out of git by
    # info/exclude, and nothing in git's admin folder.
    path = hand_made(repo, "older", "worktree-older")
    (path / MARKER).write_bytes(orjson.dumps({"tool": "branchboard", "base": "main"}))
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text(exclude.read_text() + "/" + MARKER + "\n")
    assert not (admin_folder(path) / ADMIN_MARKER).exists()
    (row,) = [r for r in project_worktrees(source.project) if r.path == path]
    assert row.owned

    removal = worktree_remove(path)
    assert not path.exists() and removal.branch_deleted


def test_a_marker_committed_on_the_worktrees_own_branch_does_not_count(
    source: Session, repo: Path
) -> None:
    path = hand_made(repo, "own-commit", "hand-own")
    (path / MARKER).write_bytes(FORGED)
    run("add", "-f", MARKER, cwd=path)
    run("commit", "-qm", "marker on the branch", cwd=path)
    with pytest.raises(NeedsConfirmation, match="not made by branchboard"):
        worktree_remove(path)
    assert path.is_dir() and "hand-own" in branches(repo)


def test_a_forged_admin_marker_in_the_main_checkout_is_not_read(
    source: Session, repo: Path
) -> None:
    # The main working tree's git folder is `.git` itself: a worktree's mark is only
    # ever looked for in `.git/worktrees/<name>`, which no commit can reach.
    (repo / ADMIN_MARKER).write_bytes(FORGED)
    run("add", ADMIN_MARKER, cwd=repo)
    run("commit", "-qm", "the admin name in the history", cwd=repo)
    path = hand_made(repo, "admin-name", "hand-admin")
    with pytest.raises(NeedsConfirmation, match="not made by branchboard"):
        worktree_remove(path)
    assert path.is_dir() and "hand-admin" in branches(repo)
