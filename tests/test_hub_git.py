"""On a hub, a pushed session's cwd is text from another machine: no git runs there and
the hub's disk is not looked at, whatever folder of the hub the text names.

The hub's host has a git repository with a worktree on a branch that holds a secret.
Bob pushes sessions whose `cwd` names that repository and that worktree. His project's
page lists none of the repository's worktrees and branches, the compare page shows no
diff (and no secret), a fork into a worktree and a worktree's removal are refused with
nothing changed, and the pages say git information is not available instead. A `git` on
the PATH that writes down every call it gets shows that none ran.
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.formats import agent_for
from sessions_app.models import Project, Session
from sessions_app.services.hub.namespaces import hub_roots, namespace_folder
from sessions_app.services.importing import sessions_import
from sessions_app.services.worktrees import WorktreeRefused, fork_where_asked, worktree_fork

from .corpus import make_idle
from .factories import assistant_record, jsonl, user_record
from .test_worktrees import commit, make_repo, run

BOB = "bob@desktop"
SECRET = "HUB-SERVER-SECRET-4711"
SLUG = "agent-abc1234"  # a CLI's own worktree name


def pushed_session(cwd: str) -> Session:
    """A Claude Code session of bob's that says it ran in `cwd`, as his push leaves it."""
    sid = str(uuid.uuid4())
    user = user_record("prompt 1", sid=sid, parent=None, cwd=cwd)
    answer = assistant_record("answer 1", sid=sid, parent=user["uuid"], cwd=cwd)
    folder = (
        namespace_folder(BOB)
        / ".claude"
        / "projects"
        / agent_for("claude").project_folder_name(cwd)
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl([user, answer]))
    make_idle(namespace_folder(BOB))
    assert not sessions_import(roots=hub_roots()).errors
    return Session.objects.get(namespace=BOB, session_id=sid)


@pytest.fixture
def host(tmp_path: Path, settings, db) -> Path:
    """The hub host's repository: `main`, and a worktree whose branch holds a secret."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.SESSION_ROOTS = [tmp_path / "local"]
    repo = make_repo(tmp_path / "srv" / "hub-config")
    worktree = repo / ".claude" / "worktrees" / SLUG
    run("worktree", "add", "-q", "-b", f"worktree-{SLUG}", str(worktree), cwd=repo)
    commit(worktree, "secret.txt", f"{SECRET}\n", "the server's secret")
    return repo


@pytest.fixture
def git_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on the PATH that writes its arguments down, then runs the real one."""
    real = next(
        Path(folder) / "git"
        for folder in os.environ["PATH"].split(os.pathsep)
        if (Path(folder) / "git").is_file()
    )
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    log.touch()
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def _worktrees(repo: Path) -> str:
    return run("worktree", "list", "--porcelain", cwd=repo)


def test_a_pushed_projects_page_lists_no_worktree_of_the_hubs_repository(
    host: Path, git_calls: Path, client: Client
) -> None:
    session = pushed_session(str(host))
    page = client.get(f"/projects/{session.project_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert SLUG not in html and f"worktree-{SLUG}" not in html, "the hub's worktrees listed"
    assert 'id="worktrees"' not in html
    assert 'id="git-elsewhere"' in html and "Git information is not available" in html
    assert "desktop" in html[html.index('id="git-elsewhere"') :].split("</p>")[0]
    assert client.get(f"/sessions/{session.ref}/").status_code == 200
    assert git_calls.read_text() == "", "git ran in a folder a pushed session names"


def test_the_compare_page_of_pushed_sessions_shows_no_diff_of_the_hubs_branches(
    host: Path, git_calls: Path, client: Client
) -> None:
    a = pushed_session(str(host))
    b = pushed_session(str(host / ".claude" / "worktrees" / SLUG))
    page = client.get(f"/sessions/{a.ref}/compare/{b.ref}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert SECRET not in html and "secret.txt" not in html
    assert 'id="compare-git"' not in html
    assert 'id="git-elsewhere"' in html and "Git information is not available" in html
    assert git_calls.read_text() == ""


def test_a_fork_of_a_pushed_session_into_a_worktree_is_refused_with_nothing_made(
    host: Path, git_calls: Path
) -> None:
    session = pushed_session(str(host))
    before = _worktrees(host)
    git_calls.write_text("")
    with pytest.raises(WorktreeRefused, match="made on the machine that holds the repository"):
        worktree_fork(session=session, turn=1, slug="try-b")
    from sessions_app.services.branching.inputs import ForkInput

    with pytest.raises(WorktreeRefused):
        fork_where_asked(
            session=session, asked=ForkInput(turn=1, include_turn=True, title=None), worktree=""
        )
    assert git_calls.read_text() == ""
    assert _worktrees(host) == before
    assert not (host / ".claude" / "worktrees" / "try-b").exists()
    assert Session.objects.filter(namespace=BOB).count() == 1


def test_removing_a_worktree_from_a_pushed_projects_page_is_refused(
    host: Path, git_calls: Path, client: Client
) -> None:
    session = pushed_session(str(host))
    worktree = host / ".claude" / "worktrees" / SLUG
    answer = client.post(
        f"/projects/{session.project_id}/worktrees/remove/",
        {"path": str(worktree), "foreign": "1", "discard": "1"},
        follow=True,
    )
    assert answer.status_code == 200
    assert "removed on that machine" in answer.content.decode()
    assert worktree.is_dir() and (worktree / "secret.txt").is_file()
    assert git_calls.read_text() == ""
    assert f"worktree-{SLUG}" in _worktrees(host)


def test_the_worktree_badge_of_a_pushed_session_says_nothing_of_the_hubs_disk(
    host: Path, client: Client
) -> None:
    """Whether a folder of that name is on the hub says nothing of bob's machine: his
    sessions' badges read the same whether it is here or not."""
    here = pushed_session(str(host / ".claude" / "worktrees" / SLUG))
    gone = pushed_session(str(host / ".claude" / "worktrees" / "agent-def5678"))
    for session in (here, gone):
        html = client.get(f"/projects/{session.project_id}/").content.decode()
        badge = html[html.index('class="badge worktree"') :].split("</span>")[0]
        assert "removed" not in badge, badge
    assert Project.objects.filter(namespace=BOB).count() == 2


def test_a_pushed_worktree_project_is_not_listed_under_the_hubs_own_repository() -> None:
    """The projects list puts an agent worktree's project under its repository's, by their
    folders: only when both are of one machine (a folder's name says nothing of another's)."""
    from sessions_app.selectors.worktrees import grouped_with_worktrees

    def project(pk: int, path: str, namespace: str = "") -> Project:
        return Project(pk=pk, agent="claude", folder=f"/p{pk}", path=path, namespace=namespace)

    main = project(1, "/srv/hub-config")
    other = project(2, "/srv/elsewhere")
    pushed = project(3, f"/srv/hub-config/.claude/worktrees/{SLUG}", BOB)
    own = project(4, "/srv/hub-config/.claude/worktrees/agent-fed9876")
    listed = grouped_with_worktrees([main, other, pushed, own])
    assert [p.pk for p in listed] == [1, 4, 2, 3]
