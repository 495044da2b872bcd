"""Forking into a worktree from the page, the API and the command; permission and audit."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from sessions_app.models import ApiToken, AuditEntry, Session

from .test_worktrees import claude_session, make_repo, run

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "code" / "app")


@pytest.fixture
def source(repo: Path, tmp_path: Path) -> Session:
    return claude_session(tmp_path / "claude-projects", repo)


def user_with(*codenames: str) -> User:
    user = User.objects.create_user("-".join(codenames) or "reader")
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


def test_the_page_offers_a_worktree_fork_and_makes_one(
    client: Client, source: Session, repo: Path
) -> None:
    page = client.get(f"/sessions/{source.session_id}/").content.decode()
    assert 'id="worktree-form"' in page

    response = client.post(
        f"/sessions/{source.session_id}/fork/",
        {"worktree": "1", "worktree_name": "from-page", "turn": "1", "mode": "include"},
    )

    assert response.status_code == 302
    new = Session.objects.get(parent=source)
    path = repo / ".claude" / "worktrees" / "from-page"
    assert new.turn_count == 1 and new.cwd == str(path)
    # It opens at the prompt box: carry on in the worktree right away.
    assert response["Location"] == f"/sessions/{new.session_id}/#run"
    entry = AuditEntry.objects.get()
    assert entry.action == "fork" and entry.detail.startswith(f"worktree {path} on branch")
    shown = client.get(response["Location"]).content.decode()
    assert f"cd {path} &amp;&amp; claude --resume {new.session_id}" in shown


def test_uncommitted_changes_are_confirmed_on_the_page(
    client: Client, source: Session, repo: Path
) -> None:
    (repo / "app.py").write_text("not committed\n")
    url = f"/sessions/{source.session_id}/fork/"
    asked = client.post(url, {"worktree": "1", "worktree_name": "wip"})
    assert asked.status_code == 409
    body = asked.content.decode()
    assert "uncommitted changes (1 changed)" in body and 'id="confirm-leave-changes"' in body
    assert not (repo / ".claude" / "worktrees" / "wip").exists()

    confirmed = client.post(url, {"worktree": "1", "worktree_name": "wip", "leave_changes": "1"})
    assert confirmed.status_code == 302
    assert (repo / ".claude" / "worktrees" / "wip" / "app.py").read_text() == "print('v1')\n"


def test_a_session_whose_folder_is_not_here_is_not_offered_a_worktree(
    client: Client, tmp_path: Path
) -> None:
    gone = claude_session(tmp_path / "claude-projects", tmp_path / "not-here")
    page = client.get(f"/sessions/{gone.session_id}/").content.decode()
    assert 'id="worktree-form"' not in page and 'id="branch-session"' in page


def test_the_api_forks_into_a_worktree(
    client: Client, source: Session, repo: Path, token: str
) -> None:
    response = client.post(
        f"/api/sessions/{source.session_id}/fork",
        orjson.dumps({"turn": 2, "worktree": "api-wt"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    path = repo / ".claude" / "worktrees" / "api-wt"
    assert body["worktree"] == {"path": str(path), "branch": "worktree-api-wt", "base": "main"}
    assert body["turns"] == 2
    again = client.post(
        f"/api/sessions/{source.session_id}/fork",
        orjson.dumps({"worktree": "api-wt"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert again.status_code == 409 and "exists already" in again.json()["error"]
    bad = client.post(
        f"/api/sessions/{source.session_id}/fork",
        orjson.dumps({"worktree": "agent-1234567"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert bad.status_code == 400 and "reserved" not in bad.json()["error"]
    assert "'agent-' prefix" in bad.json()["error"]


def test_team_mode_worktrees_need_their_own_permission(team, source: Session, repo: Path) -> None:
    writer = user_with("write_sessions")
    client = Client()
    client.force_login(writer)
    url = f"/sessions/{source.session_id}/fork/"
    assert (
        'id="worktree-form"' not in client.get(f"/sessions/{source.session_id}/").content.decode()
    )
    assert client.post(url, {"worktree": "1", "worktree_name": "nope"}).status_code == 403
    _, key = ApiToken.issue(name="w", user=writer)
    api = client.post(
        f"/api/sessions/{source.session_id}/fork",
        orjson.dumps({"worktree": True}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert api.status_code == 403
    assert not (repo / ".claude").exists()

    both = user_with("write_sessions", "manage_worktrees")
    client.force_login(both)
    assert 'id="worktree-form"' in client.get(f"/sessions/{source.session_id}/").content.decode()
    assert client.post(url, {"worktree": "1", "worktree_name": "yes"}).status_code == 302
    entry = AuditEntry.objects.get()
    assert entry.actor == both.username and "worktree" in entry.detail


def test_the_commands_fork_into_and_remove_a_worktree(source: Session, repo: Path) -> None:
    out = io.StringIO()
    call_command("fork_session", str(source.session_id), "--worktree", "cmd", stdout=out)
    text = out.getvalue()
    path = repo / ".claude" / "worktrees" / "cmd"
    assert f"worktree: {path} (branch worktree-cmd, from main)" in text
    assert f"resume: cd {path} && claude --resume " in text

    (path / "scratch.txt").write_text("x\n")
    with pytest.raises(CommandError, match="1 untracked") as refused:
        call_command("worktree_remove", str(path), stdout=io.StringIO())
    assert refused.value.returncode == 4
    out = io.StringIO()
    call_command("worktree_remove", str(path), "--discard", "--json", stdout=out)
    done = orjson.loads(out.getvalue())
    assert done["branch_deleted"] is True and not path.exists()
    assert run("branch", "--list", "worktree-cmd", cwd=repo) == ""
    assert AuditEntry.objects.filter(action="worktree_remove", detail__contains=str(path)).exists()


def test_the_project_page_lists_worktrees_and_removes_one(
    client: Client, source: Session, repo: Path
) -> None:
    call_command(
        "fork_session", str(source.session_id), "--worktree", "panel", stdout=io.StringIO()
    )
    path = repo / ".claude" / "worktrees" / "panel"
    new = Session.objects.get(parent=source)
    (path / "wip.txt").write_text("not committed\n")

    page = client.get(f"/projects/{source.project_id}/").content.decode()
    assert f"<code>{path}</code>" in page and "<code>worktree-panel</code>" in page
    assert "1 untracked" in page and f"/sessions/{new.session_id}/" in page
    badge = client.get(f"/projects/{new.project_id}/").content.decode()
    assert "worktree panel · worktree-panel" in badge and "· removed" not in badge

    url = f"/projects/{source.project_id}/worktrees/remove/"
    refused = client.post(url, {"path": str(path)}, follow=True).content.decode()
    assert "1 untracked" in refused and "confirm discarding" in refused and path.is_dir()
    done = client.post(url, {"path": str(path), "discard": "1"}, follow=True).content.decode()
    assert "Removed the worktree" in done and not path.exists()
    assert (
        "worktree panel · worktree-panel · removed"
        in client.get(f"/projects/{new.project_id}/").content.decode()
    )
    # Only agent worktrees: anything else is refused, nothing removed.
    other = client.post(url, {"path": str(repo)}, follow=True).content.decode()
    assert "not in an agent worktree folder" in other and repo.is_dir()


def test_a_worktrees_project_is_listed_under_its_repositorys(
    client: Client, source: Session, repo: Path, tmp_path: Path
) -> None:
    other = claude_session(tmp_path / "claude-projects", make_repo(tmp_path / "code" / "zzz"))
    call_command(
        "fork_session", str(source.session_id), "--worktree", "nested", stdout=io.StringIO()
    )
    new = Session.objects.get(parent=source)
    page = client.get("/").content.decode()
    page = page[page.index('class="card project-row') :]  # the projects, past the recent sessions
    main_at = page.index(f'href="/projects/{source.project_id}/"')
    worktree_at = page.index(f'href="/projects/{new.project_id}/"')
    other_at = page.index(f'href="/projects/{other.project_id}/"')
    # Right after its repository's project, whatever the order of activity says.
    assert main_at < worktree_at and not main_at < other_at < worktree_at
    assert f"worktree nested of {repo}" in page
