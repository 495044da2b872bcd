"""The guards of worktree removal and creation, through every door (issue 27).

Removal never deletes files git ignores without the discard confirmation, removes only
the worktrees the project lists, and asks before removing one the dashboard did not
make. A fork into a worktree refuses links in the agent folder before it writes
anything. Worktree names git refuses are refused up front, with one message everywhere.
"""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from sessions_app.formats import agent_for
from sessions_app.formats.worktrees import InvalidSlug, check_slug
from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from sessions_app.services.worktrees import (
    NeedsConfirmation,
    NotAWorktree,
    WorktreeRefused,
    worktree_fork,
    worktree_remove,
)

from .test_worktrees import QWEN_FIXTURE, claude_session, git_env, make_repo, run

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose committed .gitignore ignores `.env`, as most projects do."""
    path = make_repo(tmp_path / "code" / "app")
    (path / ".gitignore").write_text(".env\nbuild/\n")
    run("add", ".gitignore", cwd=path)
    run("commit", "-qm", "ignore secrets", cwd=path)
    return path


@pytest.fixture
def source(repo: Path, tmp_path: Path) -> Session:
    return claude_session(tmp_path / "claude-projects", repo)


def qwen_session(repo: Path, tmp_path: Path) -> Session:
    """The real Qwen Code fixture, moved to have run in `repo`, imported."""
    root = tmp_path / "qwen-projects"
    lines = QWEN_FIXTURE.read_bytes().replace(b"/home/dev/code/qwenproj", str(repo).encode())
    folder = root / agent_for("qwen").project_folder_name(str(repo)) / "chats"
    folder.mkdir(parents=True)
    (folder / QWEN_FIXTURE.name).write_bytes(lines)
    assert not sessions_import(roots=[root]).errors
    return Session.objects.get(session_id=QWEN_FIXTURE.stem)


def forked(source: Session, slug: str) -> Path:
    """A worktree the dashboard made (with its ownership marker)."""
    return worktree_fork(session=source, slug=slug).plan.path


def with_secret(worktree: Path) -> Path:
    """The worktree, clean for git except an ignored `.env` holding a secret."""
    (worktree / ".env").write_text("SECRET=1\n")
    assert run("status", "--porcelain", "--untracked-files=all", cwd=worktree) == ""
    return worktree / ".env"


def remove_url(session: Session) -> str:
    return f"/projects/{session.project_id}/worktrees/remove/"


def on_disk(folder: Path) -> set[tuple[str, bool]]:
    """Every path below `folder` (links not followed) and whether it is a link."""
    found: set[tuple[str, bool]] = set()
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(parent) / name
            found.add((str(path.relative_to(folder)), path.is_symlink()))
    return found


# 1. Ignored files count as changes.


def test_an_ignored_secret_needs_discarding_and_the_refusal_lists_it(
    source: Session, repo: Path
) -> None:
    path = forked(source, "secret")
    secret = with_secret(path)
    (path / "build").mkdir()
    (path / "build" / "out.o").write_bytes(b"\0")

    with pytest.raises(NeedsConfirmation, match=r"2 ignored.*\.env") as refused:
        worktree_remove(path)
    assert "build/" in str(refused.value)
    assert secret.read_text() == "SECRET=1\n"

    removal = worktree_remove(path, discard=True)
    assert not path.exists() and removal.discarded.ignored == (".env", "build/")
    assert "discarding 2 ignored" in removal.describe()


def test_the_marker_alone_is_no_change(source: Session, repo: Path) -> None:
    path = forked(source, "only-marker")
    removal = worktree_remove(path)
    assert not path.exists() and not removal.discarded.dirty


def test_the_command_refuses_to_drop_an_ignored_secret(source: Session, repo: Path) -> None:
    path = forked(source, "cmd-secret")
    secret = with_secret(path)
    with pytest.raises(CommandError, match=r"1 ignored.*\.env") as refused:
        call_command("worktree_remove", str(path), stdout=io.StringIO())
    assert refused.value.returncode == 4 and secret.is_file()
    call_command("worktree_remove", str(path), "--discard", stdout=io.StringIO())
    assert not path.exists()


def test_the_page_refuses_to_drop_an_ignored_secret(
    client: Client, source: Session, repo: Path
) -> None:
    path = forked(source, "page-secret")
    secret = with_secret(path)

    panel = client.get(f"/projects/{source.project_id}/").content.decode()
    assert "1 ignored" in panel and 'name="discard"' in panel

    refused = client.post(remove_url(source), {"path": str(path)}, follow=True).content.decode()
    assert "1 ignored" in refused and ".env" in refused and "Removed" not in refused
    assert secret.read_text() == "SECRET=1\n"

    done = client.post(remove_url(source), {"path": str(path), "discard": "1"}, follow=True)
    assert "Removed the worktree" in done.content.decode() and not path.exists()


def test_stale_removal_keeps_an_agent_worktree_with_ignored_files(repo: Path) -> None:
    old = 1_000_000_000
    agent = repo / ".claude" / "worktrees" / "agent-abcdef1"
    dates = {"GIT_COMMITTER_DATE": f"@{old}", "GIT_AUTHOR_DATE": f"@{old}"}
    run("commit", "-q", "--amend", "--no-edit", cwd=repo, env=dates)
    run("worktree", "add", "-q", "-b", "wt-agent", str(agent), cwd=repo)
    secret = with_secret(agent)
    os.utime(agent, (old, old))

    call_command("worktree_remove", "--stale", str(repo), stdout=io.StringIO())

    assert secret.read_text() == "SECRET=1\n"


# 2. Only the project's worktrees; someone else's only when confirmed.


def test_the_page_refuses_another_repositorys_worktree(
    client: Client, source: Session, repo: Path, tmp_path: Path
) -> None:
    other_repo = make_repo(tmp_path / "code" / "other")
    other = forked(claude_session(tmp_path / "claude-projects", other_repo), "theirs")

    said = client.post(remove_url(source), {"path": str(other), "discard": "1", "foreign": "1"})
    text = client.get(said["Location"]).content.decode()

    assert other.is_dir() and "not one of this project" in text


@pytest.mark.parametrize("slug", ["mine", "agent-abcdef1"])
def test_a_worktree_the_dashboard_did_not_make_needs_confirming_on_the_page(
    client: Client, source: Session, repo: Path, slug: str
) -> None:
    path = repo / ".claude" / "worktrees" / slug
    run("worktree", "add", "-q", "-b", f"hand-{slug}", str(path), cwd=repo)

    panel = client.get(f"/projects/{source.project_id}/").content.decode()
    assert 'name="foreign"' in panel

    refused = client.post(remove_url(source), {"path": str(path)}, follow=True).content.decode()
    assert path.is_dir() and "not made by branchboard" in refused

    done = client.post(remove_url(source), {"path": str(path), "foreign": "1"}, follow=True)
    assert "Removed the worktree" in done.content.decode() and not path.exists()


def test_a_worktree_the_dashboard_did_not_make_needs_the_foreign_flag(
    source: Session, repo: Path
) -> None:
    path = repo / ".claude" / "worktrees" / "agent-abcdef1"
    run("worktree", "add", "-q", "-b", "cli-agent", str(path), cwd=repo)
    with pytest.raises(CommandError, match="not made by branchboard") as refused:
        call_command("worktree_remove", str(path), stdout=io.StringIO())
    assert refused.value.returncode == 4 and path.is_dir()
    with pytest.raises(NeedsConfirmation, match="confirm that it is someone else's"):
        worktree_remove(path)
    call_command("worktree_remove", str(path), "--foreign", stdout=io.StringIO())
    assert not path.exists()


@pytest.mark.parametrize("given", ["", "   ", "app/.claude/worktrees/x", "."])
def test_an_empty_or_relative_path_does_not_echo_the_servers_folder(
    client: Client, source: Session, given: str
) -> None:
    said = client.post(remove_url(source), {"path": given, "discard": "1", "foreign": "1"})
    text = client.get(said["Location"]).content.decode()
    assert 'class="message error"' in text and os.getcwd() not in text


def test_the_command_refuses_an_empty_path(source: Session) -> None:
    with pytest.raises(CommandError, match="no worktree path") as refused:
        call_command("worktree_remove", "", stdout=io.StringIO())
    assert os.getcwd() not in str(refused.value)


def test_the_service_refuses_a_path_outside_the_listed_worktrees(
    source: Session, repo: Path, tmp_path: Path
) -> None:
    other_repo = make_repo(tmp_path / "code" / "other")
    other = forked(claude_session(tmp_path / "claude-projects", other_repo), "theirs")
    with pytest.raises(NotAWorktree, match="not one of this project"):
        worktree_remove(other, listed_in=repo, discard=True, foreign=True)
    assert other.is_dir()


# 3. Links in the agent folder: refused before anything is written.


def agent_session(agent: str, repo: Path, tmp_path: Path) -> Session:
    if agent == "qwen":
        return qwen_session(repo, tmp_path)
    return claude_session(tmp_path / "claude-projects", repo)


@pytest.mark.parametrize("agent", ["claude", "qwen"])
def test_a_linked_gitignore_in_the_agent_folder_is_refused(
    repo: Path, tmp_path: Path, agent: str
) -> None:
    session = agent_session(agent, repo, tmp_path)
    folder = repo / f".{agent}"
    folder.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    (folder / ".gitignore").symlink_to(outside)
    before = on_disk(repo)

    with pytest.raises(WorktreeRefused, match=r"\.gitignore is a (symbolic )?link"):
        worktree_fork(session=session, slug="linked", leave_changes=True)

    assert on_disk(repo) == before and outside.read_text() == "theirs\n"
    assert run("branch", "--list", "worktree-linked", cwd=repo) == ""


@pytest.mark.parametrize("agent", ["claude", "qwen"])
def test_a_linked_worktrees_folder_is_refused_before_the_gitignore_is_written(
    repo: Path, tmp_path: Path, agent: str
) -> None:
    session = agent_session(agent, repo, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / f".{agent}").mkdir()
    (repo / f".{agent}" / "worktrees").symlink_to(elsewhere, target_is_directory=True)
    before = on_disk(repo)

    with pytest.raises(WorktreeRefused, match=r"worktrees is a (symbolic )?link"):
        worktree_fork(session=session, slug="linked", leave_changes=True)

    assert on_disk(repo) == before and not any(elsewhere.iterdir())
    assert not (repo / f".{agent}" / ".gitignore").exists()


@pytest.mark.parametrize("agent", ["claude", "qwen"])
def test_a_linked_agent_folder_is_refused_and_nothing_written(
    repo: Path, tmp_path: Path, agent: str
) -> None:
    session = agent_session(agent, repo, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / f".{agent}").symlink_to(elsewhere, target_is_directory=True)
    before = on_disk(repo)
    with pytest.raises(WorktreeRefused, match="link"):
        worktree_fork(session=session, slug="linked", leave_changes=True)
    assert on_disk(repo) == before and not any(elsewhere.iterdir())


def test_an_agent_folder_that_is_a_file_is_refused(repo: Path, source: Session) -> None:
    (repo / ".claude").write_text("not a folder\n")
    before = on_disk(repo)
    with pytest.raises(WorktreeRefused, match="not a folder"):
        worktree_fork(session=source, slug="filed", leave_changes=True)
    assert on_disk(repo) == before


def test_a_linked_gitignore_is_refused_on_the_page_the_api_and_the_command(
    client: Client, source: Session, repo: Path, tmp_path: Path, token: str
) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude" / ".gitignore").symlink_to(tmp_path / "nowhere")
    before = on_disk(repo)

    page = client.post(
        f"/sessions/{source.session_id}/fork/",
        {"worktree": "1", "worktree_name": "via-page"},
        HTTP_HX_REQUEST="true",
    )
    assert page.status_code == 400
    assert ".gitignore is a symbolic link" in page.content.decode()

    api = client.post(
        f"/api/sessions/{source.session_id}/fork",
        orjson.dumps({"worktree": "via-api"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert api.status_code == 400 and ".gitignore is a symbolic link" in api.json()["error"]

    with pytest.raises(CommandError, match=r"\.gitignore is a symbolic link"):
        call_command(
            "fork_session", str(source.session_id), "--worktree", "cmd", stdout=io.StringIO()
        )
    assert on_disk(repo) == before and Session.objects.count() == 1


# 4. Worktree names: what git refuses is refused up front, one message everywhere.


@pytest.mark.parametrize(
    "name", ["x.lock", "foo.", "a.lock", "ok", "a.b", "x.lockb", "a_b-c.d", "lock", "a.lock.b"]
)
def test_the_name_check_agrees_with_git(repo: Path, name: str) -> None:
    git_says = subprocess.run(
        ["git", "check-ref-format", "--branch", f"worktree-{name}"],
        cwd=repo,
        capture_output=True,
        check=False,
        env=git_env(),
    )
    try:
        check_slug(name)
        ours = True
    except InvalidSlug:
        ours = False
    assert ours == (git_says.returncode == 0)


@pytest.mark.parametrize("name", ["x.lock", "foo."])
def test_names_git_refuses_are_refused_up_front(source: Session, repo: Path, name: str) -> None:
    with pytest.raises(WorktreeRefused, match=f"worktree name '{name}'"):
        worktree_fork(session=source, slug=name)
    assert not (repo / ".claude").exists()


def test_a_name_with_spaces_is_refused_with_one_message_everywhere(
    client: Client, source: Session, repo: Path, token: str
) -> None:
    name = " spaced "
    with pytest.raises(WorktreeRefused) as service:
        worktree_fork(session=source, slug=name)
    message = str(service.value)

    page = client.post(
        f"/sessions/{source.session_id}/fork/",
        {"worktree": "1", "worktree_name": name},
        HTTP_HX_REQUEST="true",
    )
    api = client.post(
        f"/api/sessions/{source.session_id}/fork",
        orjson.dumps({"worktree": name}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    with pytest.raises(CommandError) as command:
        call_command("fork_session", str(source.session_id), "--worktree", name)

    assert page.status_code == 400 and message in page.content.decode().replace("&#x27;", "'")
    assert api.status_code == 400 and api.json()["error"] == message
    assert str(command.value) == message
    assert not (repo / ".claude").exists() and Session.objects.count() == 1
