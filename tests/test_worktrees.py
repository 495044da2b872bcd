"""Forking into a git worktree and removing one, on real temporary git repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from sessions_app.formats import agent_for
from sessions_app.formats.worktrees import ADMIN_MARKER
from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from sessions_app.services.worktrees import (
    MARKER,
    NeedsConfirmation,
    NotAWorktree,
    WorktreeError,
    WorktreeExists,
    WorktreeRefused,
    stale_worktrees_remove,
    worktree_fork,
    worktree_remove,
)

from .factories import assistant_record, jsonl, user_record

pytestmark = pytest.mark.django_db

QWEN_FIXTURE = next(
    (Path(__file__).parent / "fixtures/cli/qwen/-home-dev-code-qwenproj/chats").glob("*.jsonl")
)


# Who the tests' commits are by: given to every git call, so that a newcomer without a
# global identity (a fresh user, a container) runs the tests as they are.
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git_env(**extra: str) -> dict[str, str]:
    """The environment of the tests' own git calls: none of the caller's `GIT_*` variables,
    none of the user's or the system's git config (a global `commit.gpgsign` or hook would
    change what a test does), an identity for commits, and `extra` (commit dates)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", **GIT_IDENTITY, **extra)
    return env


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """git, as a user would run it, with an identity for commits (`git_env`); `env`: more."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env=git_env(**(env or {})),
    )
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    run("init", "-q", "-b", "main", cwd=path)
    (path / "app.py").write_text("print('v1')\n")
    run("add", "-A", cwd=path)
    run("commit", "-qm", "first", cwd=path)
    return path


def commit(repo: Path, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text)
    run("add", "--", name, cwd=repo)
    run("commit", "-qm", message, cwd=repo)
    return run("rev-parse", "HEAD", cwd=repo)


def claude_session(root: Path, cwd: Path, turns: int = 2) -> Session:
    """A Claude Code session that ran in `cwd`, imported; its records carry a git branch."""
    sid = str(__import__("uuid").uuid4())
    records, parent = [], None
    for n in range(turns):
        user = user_record(
            f"prompt {n + 1}",
            sid=sid,
            parent=parent,
            cwd=str(cwd),
            timestamp=f"2026-01-01T00:0{n}:00.000Z",
        )
        answer = assistant_record(
            f"answer {n + 1}",
            sid=sid,
            parent=user["uuid"],
            cwd=str(cwd),
            timestamp=f"2026-01-01T00:0{n}:30.000Z",
        )
        for record in (user, answer):
            record["gitBranch"] = "feature"
        records += [user, answer]
        parent = answer["uuid"]
    folder = root / agent_for("claude").project_folder_name(str(cwd))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl(records))
    assert not sessions_import(roots=[root]).errors
    return Session.objects.get(session_id=sid)


def records_of(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "code" / "app")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "claude-projects"


# Forking into a new worktree.


def test_a_fork_gets_a_worktree_from_the_sessions_own_branch(repo: Path, root: Path) -> None:
    run("switch", "-qc", "feature", cwd=repo)
    feature_head = commit(repo, "feature.py", "x = 1\n", "feature work")
    run("switch", "-q", "main", cwd=repo)  # the main tree moves on; the session's does not
    run("worktree", "add", "-q", str(repo.parent / "app-feature"), "feature", cwd=repo)
    session = claude_session(root, repo.parent / "app-feature")

    made = worktree_fork(session=session, turn=1, slug="try-b")

    path = repo.parent / "app-feature" / ".claude" / "worktrees" / "try-b"
    assert made.plan.path == path and made.plan.base == "feature"
    assert run("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "worktree-try-b"
    assert run("rev-parse", "HEAD", cwd=path) == feature_head
    new = made.session
    assert new.turn_count == 1 and new.parent == session and new.cwd == str(path)
    expected = root / agent_for("claude").project_folder_name(str(path)) / f"{new.session_id}.jsonl"
    assert Path(new.path) == expected and expected.is_file()
    records = records_of(expected)
    assert {r["sessionId"] for r in records} == {str(new.session_id)}
    assert {r["cwd"] for r in records if "cwd" in r} == {str(path)}
    assert {r["gitBranch"] for r in records if "gitBranch" in r} == {"worktree-try-b"}
    # The source's file and its working tree's branch are untouched.
    assert run("rev-parse", "--abbrev-ref", "HEAD", cwd=repo.parent / "app-feature") == "feature"


def test_a_session_in_a_monorepo_subfolder_gets_the_top_levels_worktree(
    repo: Path, root: Path
) -> None:
    sub = repo / "packages" / "web"
    sub.mkdir(parents=True)
    session = claude_session(root, sub)

    made = worktree_fork(session=session, slug="mono")

    path = repo / ".claude" / "worktrees" / "mono"
    assert made.plan.path == path and made.plan.subfolder == "packages/web"
    assert made.session.cwd == str(path / "packages" / "web")
    assert made.session.turn_count == 2
    folder = agent_for("claude").project_folder_name(str(path / "packages" / "web"))
    assert Path(made.session.path).parent == root / folder


def test_a_qwen_session_gets_its_worktree_under_dot_qwen(repo: Path, tmp_path: Path) -> None:
    root = tmp_path / "qwen-projects"
    lines = QWEN_FIXTURE.read_bytes().replace(b"/home/dev/code/qwenproj", str(repo).encode())
    folder = root / agent_for("qwen").project_folder_name(str(repo)) / "chats"
    folder.mkdir(parents=True)
    (folder / QWEN_FIXTURE.name).write_bytes(lines)
    assert not sessions_import(roots=[root]).errors
    session = Session.objects.get(session_id=QWEN_FIXTURE.stem)

    made = worktree_fork(session=session, slug="qw")

    path = repo / ".qwen" / "worktrees" / "qw"
    assert run("rev-parse", "--abbrev-ref", "HEAD", cwd=path) == "worktree-qw"
    assert (repo / ".qwen" / ".gitignore").read_text() == "worktrees/\n"
    new_file = Path(made.session.path)
    assert new_file.parent.name == "chats"
    assert new_file.parent.parent.name == agent_for("qwen").project_folder_name(str(path))
    assert made.session.turn_count == session.turn_count
    assert {r.get("cwd") for r in records_of(new_file)} <= {str(path), None}


@pytest.mark.parametrize("existing", ["branch", "path"])
def test_an_existing_branch_or_path_is_refused_and_nothing_is_written(
    repo: Path, root: Path, existing: str
) -> None:
    session = claude_session(root, repo)
    if existing == "branch":
        run("branch", "worktree-taken", cwd=repo)
    else:
        (repo / ".claude" / "worktrees" / "taken").mkdir(parents=True)
    files_before = sorted(p for p in root.rglob("*") if p.is_file())

    with pytest.raises(WorktreeExists, match="exists already"):
        worktree_fork(session=session, slug="taken")

    assert sorted(p for p in root.rglob("*") if p.is_file()) == files_before
    assert not (repo / ".claude" / ".gitignore").exists()
    assert Session.objects.count() == 1


@pytest.mark.parametrize(
    "slug", ["a/b", "..x", "x..y", ".hidden", "-dash", "agent-1a2b3c4", "x" * 65, "a b", "é"]
)
def test_bad_worktree_names_are_refused(repo: Path, root: Path, slug: str) -> None:
    session = claude_session(root, repo)
    with pytest.raises(WorktreeRefused, match="worktree name"):
        worktree_fork(session=session, slug=slug)
    assert not (repo / ".claude").exists()


def test_a_name_is_made_up_when_none_is_given(repo: Path, root: Path) -> None:
    session = claude_session(root, repo)
    first = worktree_fork(session=session).plan
    second = worktree_fork(session=session).plan
    assert first.slug != second.slug
    assert first.path.is_dir() and second.path.is_dir()
    assert first.slug.startswith("fork-") and not first.slug.startswith("agent-")


def test_the_gitignore_is_created_appended_to_or_left_alone(repo: Path, root: Path) -> None:
    session = claude_session(root, repo)
    ignore = repo / ".claude" / ".gitignore"
    worktree_fork(session=session, slug="one")
    assert ignore.read_text() == "worktrees/\n"
    worktree_fork(session=session, slug="two")
    assert ignore.read_text() == "worktrees/\n"  # the line is there: left alone

    other = make_repo(repo.parent / "other")
    (other / ".claude").mkdir()
    (other / ".claude" / ".gitignore").write_text("settings.local.json")  # no final newline
    worktree_fork(session=claude_session(root, other), slug="three")
    assert (other / ".claude" / ".gitignore").read_text() == "settings.local.json\nworktrees/\n"


def test_the_marker_names_the_fork_and_stays_out_of_git_status(repo: Path, root: Path) -> None:
    session = claude_session(root, repo)
    made = worktree_fork(session=session, slug="marked")
    admin = run("rev-parse", "--path-format=absolute", "--git-dir", cwd=made.plan.path)
    marker = orjson.loads((Path(admin) / ADMIN_MARKER).read_bytes())
    assert not (made.plan.path / MARKER).exists()  # a checkout's file a commit could forge
    assert marker["session_id"] == str(made.session.session_id)
    assert marker["source_session_id"] == str(session.session_id)
    assert marker["tool"] == "branchboard" and marker["agent"] == "claude"
    assert run("status", "--porcelain", "--untracked-files=all", cwd=made.plan.path) == ""
    run("add", "-A", cwd=made.plan.path)
    assert run("diff", "--cached", "--name-only", cwd=made.plan.path) == ""
    # The main tree stays clean too: the agent folder's .gitignore is its only change.
    assert run("status", "--porcelain", cwd=repo) == "?? .claude/"


def test_outside_a_repository_or_inside_an_agent_worktree_is_refused(
    tmp_path: Path, repo: Path, root: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeRefused, match="not inside a git repository"):
        worktree_fork(session=claude_session(root, plain))
    made = worktree_fork(session=claude_session(root, repo), slug="outer")
    with pytest.raises(WorktreeRefused, match="not nested"):
        worktree_fork(session=made.session, slug="inner")


def test_uncommitted_changes_need_confirming_and_stay_behind(repo: Path, root: Path) -> None:
    session = claude_session(root, repo)
    (repo / "app.py").write_text("print('edited, not committed')\n")
    (repo / "notes.txt").write_text("untracked\n")

    with pytest.raises(NeedsConfirmation, match=r"1 changed, 1 untracked"):
        worktree_fork(session=session, slug="dirty")
    assert not (repo / ".claude").exists()

    made = worktree_fork(session=session, slug="dirty", leave_changes=True)
    assert (made.plan.path / "app.py").read_text() == "print('v1')\n"
    assert not (made.plan.path / "notes.txt").exists()


def test_a_failed_fork_takes_its_worktree_back(repo: Path, root: Path) -> None:
    session = claude_session(root, repo)
    with pytest.raises(Exception, match="turn"):
        worktree_fork(session=session, turn=99, slug="undone")
    assert not (repo / ".claude" / "worktrees" / "undone").exists()
    assert run("branch", "--list", "worktree-undone", cwd=repo) == ""


# Removing a worktree.


def fork_worktree(repo: Path, root: Path, slug: str) -> Path:
    return worktree_fork(session=claude_session(root, repo), slug=slug).plan.path


def test_a_clean_worktree_is_removed_with_its_branch(repo: Path, root: Path) -> None:
    path = fork_worktree(repo, root, "done")
    removal = worktree_remove(path)
    assert not path.exists() and removal.branch_deleted
    assert run("branch", "--list", "worktree-done", cwd=repo) == ""


@pytest.mark.parametrize("change", ["tracked", "untracked"])
def test_changes_block_a_removal_until_discarding_is_confirmed(
    repo: Path, root: Path, change: str
) -> None:
    path = fork_worktree(repo, root, "busy")
    if change == "tracked":
        (path / "app.py").write_text("changed\n")
    else:
        (path / "new.txt").write_text("new\n")
    with pytest.raises(
        NeedsConfirmation, match=f"1 {'changed' if change == 'tracked' else change}"
    ):
        worktree_remove(path)
    assert path.is_dir()
    removal = worktree_remove(path, discard=True)
    assert not path.exists() and removal.discarded.dirty and removal.branch_deleted


def test_a_worktree_mid_merge_with_only_conflicts_is_dirty(repo: Path, root: Path) -> None:
    path = fork_worktree(repo, root, "merge")
    commit(repo, "app.py", "print('main')\n", "main side")
    commit(path, "app.py", "print('fork')\n", "fork side")
    subprocess.run(["git", "merge", "main"], cwd=path, capture_output=True, env=git_env())
    assert run("status", "--porcelain", cwd=path) == "UU app.py"
    with pytest.raises(NeedsConfirmation, match="1 conflicted"):
        worktree_remove(path)
    assert worktree_remove(path, discard=True).discarded.conflicted == 1
    assert not path.exists()


def test_a_locked_worktree_stays_even_when_discarding(repo: Path, root: Path) -> None:
    path = fork_worktree(repo, root, "locked")
    (path / "wip.txt").write_text("wip\n")
    run("worktree", "lock", "--reason", "mine", str(path), cwd=repo)
    with pytest.raises(WorktreeError, match="nothing was removed"):
        worktree_remove(path, discard=True)
    assert (path / "wip.txt").is_file()


def test_a_branch_with_commits_nowhere_else_is_kept_even_when_discarding(
    repo: Path, root: Path
) -> None:
    path = fork_worktree(repo, root, "work")
    commit(path, "new.py", "y = 2\n", "only here")
    (path / "scratch.txt").write_text("throw away\n")
    removal = worktree_remove(path, discard=True)
    assert not path.exists()
    assert not removal.branch_deleted and removal.unique_commits == 1
    assert run("branch", "--list", "worktree-work", cwd=repo) == "worktree-work"
    assert "kept its branch worktree-work" in removal.describe()


def test_only_agent_worktrees_are_removed(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    run("worktree", "add", "-q", "-b", "side", str(other), cwd=repo)
    with pytest.raises(NotAWorktree, match="not in an agent worktree folder"):
        worktree_remove(other)
    with pytest.raises(NotAWorktree):
        worktree_remove(repo)
    fake = repo / ".claude" / "worktrees" / "not-a-worktree"
    fake.mkdir(parents=True)
    with pytest.raises(NotAWorktree, match="not a worktree of the repository"):
        worktree_remove(fake)
    assert other.is_dir() and fake.is_dir()


def test_a_worktree_whose_session_is_being_written_needs_confirming(repo: Path, root: Path) -> None:
    made = worktree_fork(session=claude_session(root, repo), slug="live")
    with open(made.session.path, "ab") as f:  # the CLI goes on writing it
        f.write(b"\n")
    now = time.time()
    os.utime(made.session.path, (now, now))
    with pytest.raises(NeedsConfirmation, match="may still be running"):
        worktree_remove(made.plan.path)
    worktree_remove(made.plan.path, live_ok=True)
    assert not made.plan.path.exists()
    # The session stays in the dashboard.
    assert Session.objects.filter(pk=made.session.pk).exists()


def test_git_is_found_without_the_callers_git_variables(
    repo: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A GIT_DIR pointing elsewhere must not make the dashboard act on another repository.
    other = make_repo(repo.parent / "decoy")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    made = worktree_fork(session=claude_session(root, repo), slug="env")
    assert made.plan.top == repo
    assert run("branch", "--list", "--format=%(refname:short)", "worktree-env", cwd=repo) == (
        "worktree-env"
    )
    assert run("branch", "--list", "worktree-env", cwd=other) == ""
    assert run("worktree", "list", "--porcelain", cwd=other).count("worktree ") == 1
    shutil.rmtree(other)


def test_stale_agent_worktrees_are_removed_and_anything_in_doubt_kept(repo: Path) -> None:
    old = time.time() - 40 * 86400
    # The repository's one commit is 40 days old.
    dates = {"GIT_COMMITTER_DATE": f"@{int(old)}", "GIT_AUTHOR_DATE": f"@{int(old)}"}
    run("commit", "-q", "--amend", "--no-edit", cwd=repo, env=dates)
    folder = repo / ".claude" / "worktrees"
    made = {}
    for slug in ("agent-0000001", "agent-0000002", "agent-0000003", "agent-0000004", "mine-old"):
        made[slug] = folder / slug
        run("worktree", "add", "-q", "-b", f"wt-{slug}", str(made[slug]), cwd=repo)
    (made["agent-0000002"] / "wip.txt").write_text("uncommitted\n")
    commit(made["agent-0000003"], "own.py", "z = 3\n", "a commit of its own")
    for slug, path in made.items():
        if slug != "agent-0000004":  # this one was touched today
            os.utime(path, (old, old))

    # Without --foreign the CLIs' worktrees (no marker of ours) are all kept.
    assert all(
        said.startswith("kept") and path.is_dir() for path, said in stale_worktrees_remove(repo)
    )
    outcome = {path.name: said for path, said in stale_worktrees_remove(repo, foreign=True)}

    assert outcome["agent-0000001"].startswith("removed the worktree")
    assert not made["agent-0000001"].exists()
    for kept in ("agent-0000002", "agent-0000003", "agent-0000004"):
        assert outcome[kept] == "kept: not stale" and made[kept].is_dir()
    assert "mine-old" not in outcome and made["mine-old"].is_dir()  # not an agent's
