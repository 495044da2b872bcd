"""The code as it was at turn N: Claude Code's file backups restored into a fork's worktree.

Real git repositories; the checkpoint records have the shape Claude Code 2.1.328
writes (`file-history-snapshot` before each prompt, `file-history-delta` when a
turn first edits a file; see tests/compat/test_worktree_compat.py for the real
CLI writing them) and an older one's `isSnapshotUpdate` snapshots.
"""

from __future__ import annotations

import io
import os
import uuid
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.test import Client

from sessions_app.formats import agent_for
from sessions_app.formats.claude.file_history import Checkpoints
from sessions_app.models import Session
from sessions_app.services.branching.inputs import fork_input
from sessions_app.services.git import read_marker
from sessions_app.services.importing import sessions_import
from sessions_app.services.worktrees import WorktreeRefused, fork_where_asked, worktree_fork

from .factories import assistant_record, jsonl, user_record
from .test_worktrees import make_repo, run

pytestmark = pytest.mark.django_db


def snapshot(
    prompt: str, files: dict[str, tuple[str | None, int]], *, update: bool = False
) -> dict:
    return {
        "type": "file-history-snapshot",
        "messageId": prompt,
        "snapshot": {
            "messageId": prompt,
            "trackedFileBackups": {
                path: {"backupFileName": name, "version": v, "backupTime": "2026-01-01T00:00:00Z"}
                for path, (name, v) in files.items()
            },
            "timestamp": "2026-01-01T00:00:00Z",
        },
        "isSnapshotUpdate": update,
    }


def delta(prompt: str, path: str, name: str | None, version: int, parent: str = "") -> dict:
    backup: dict = {"backupFileName": name, "version": version, "backupTime": "2026-01-01Z"}
    if parent:
        backup["realParentDir"] = parent
    return {
        "type": "file-history-delta",
        "messageId": str(uuid.uuid4()),
        "snapshotMessageId": prompt,
        "trackingPath": path,
        "backup": backup,
        "timestamp": "2026-01-01T00:00:00Z",
    }


class Story:
    """A three-turn session in `repo` whose turns edit files, with its backups on disk.

    Turn 1 edits the committed a.txt and creates b.txt; turn 2 edits a.txt again,
    creates src/new.py and a file outside the repository. gone.txt is first seen at
    version 2, whose backup is missing on disk.
    """

    def __init__(self, root: Path, repo: Path, *, with_parent_dir: bool = True) -> None:
        self.sid = str(uuid.uuid4())
        cwd = str(repo)
        prompts = [str(uuid.uuid4()) for _ in range(3)]
        self.prompts = prompts
        parent_dir = cwd if with_parent_dir else ""
        records: list[dict] = []
        parent = None
        checkpoints = {
            0: [
                snapshot(prompts[0], {}),
            ],
            1: [
                snapshot(prompts[1], {"a.txt": ("aaaa@v2", 2), "b.txt": ("bbbb@v2", 2)}),
            ],
            2: [
                snapshot(
                    prompts[2],
                    {
                        "a.txt": ("aaaa@v3", 3),
                        "b.txt": ("bbbb@v2", 2),
                        "src/new.py": ("nnnn@v2", 2),
                        "/elsewhere/x.txt": ("xxxx@v2", 2),
                        "gone.txt": ("gggg@v2", 2),
                    },
                ),
            ],
        }
        deltas = {
            0: [
                delta(prompts[0], "a.txt", "aaaa@v1", 1, parent_dir),
                delta(prompts[0], "b.txt", None, 1, parent_dir),
            ],
            1: [
                delta(prompts[1], "src/new.py", None, 1, parent_dir),
                delta(prompts[1], "/elsewhere/x.txt", None, 1),
            ],
            2: [],
        }
        for n in range(3):
            records += checkpoints[n]
            user = user_record(f"prompt {n + 1}", sid=self.sid, parent=parent, cwd=cwd)
            user["uuid"] = prompts[n]
            answer = assistant_record(f"answer {n + 1}", sid=self.sid, parent=prompts[n], cwd=cwd)
            records += [user, answer, *deltas[n]]
            parent = answer["uuid"]
        records.append(snapshot(str(uuid.uuid4()), {}))  # a stray one for no prompt
        folder = root / agent_for("claude").project_folder_name(cwd)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{self.sid}.jsonl").write_bytes(jsonl(records))
        self.history = root.parent / "file-history" / self.sid
        self.history.mkdir(parents=True)
        for name, text in {
            "aaaa@v1": "a committed\n",
            "aaaa@v2": "a after turn 1\n",
            "aaaa@v3": "a after turn 2\n",
            "bbbb@v2": "b after turn 1\n",
            "nnnn@v2": "new after turn 2\n",
            "xxxx@v2": "outside\n",
        }.items():
            (self.history / name).write_text(text)
        os.chmod(self.history / "nnnn@v2", 0o755)
        assert not sessions_import(roots=[root]).errors
        self.session = Session.objects.get(session_id=self.sid)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "code" / "app")
    (repo / "a.txt").write_text("a committed\n")
    (repo / "src").mkdir()
    (repo / "src" / "new.py").write_text("committed later\n")
    run("add", "-A", cwd=repo)
    run("commit", "-qm", "files", cwd=repo)
    return repo


@pytest.fixture
def story(tmp_path: Path, repo: Path) -> Story:
    return Story(tmp_path / "claude" / "projects", repo)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (links as their target), .git left out."""
    out: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        if ".git" in path.relative_to(folder).parts:
            continue
        if path.is_symlink():
            out[str(path.relative_to(folder))] = os.readlink(path).encode()
        elif path.is_file():
            out[str(path.relative_to(folder))] = path.read_bytes()
    return out


def test_a_fork_after_turn_1_gets_the_files_as_they_were_then(story: Story, repo: Path) -> None:
    before = tree(repo)
    made = worktree_fork(session=story.session, turn=1, slug="t1", with_files=True)
    path = repo / ".claude" / "worktrees" / "t1"
    assert (path / "a.txt").read_text() == "a after turn 1\n"
    assert (path / "b.txt").read_text() == "b after turn 1\n"
    # src/new.py did not exist after turn 1 (turn 2 created it): gone from the worktree.
    assert not (path / "src" / "new.py").exists()
    done = made.restored
    assert done is not None and done.point == "after turn 1"
    assert done.restored == ["a.txt", "b.txt"]
    assert done.removed == ["src/new.py"]
    # gone.txt: first tracked at turn 3 with no recorded state before: not known.
    assert done.no_backup == ["gone.txt"]
    assert done.skipped == ["/elsewhere/x.txt: outside the repository"]
    # The source working tree is untouched; the worktree shows the restored state as changes.
    assert {k: v for k, v in tree(repo).items() if not k.startswith(".claude")} == before
    status = {line.strip() for line in run("status", "--porcelain", cwd=path).splitlines()}
    assert status == {"M a.txt", "?? b.txt", "D src/new.py"}


def test_a_fork_after_turn_2_and_an_edit_and_fork_before_turn_2(story: Story, repo: Path) -> None:
    after2 = worktree_fork(session=story.session, turn=2, slug="t2", with_files=True)
    path = repo / ".claude" / "worktrees" / "t2"
    assert (path / "a.txt").read_text() == "a after turn 2\n"
    assert (path / "src" / "new.py").read_text() == "new after turn 2\n"
    assert os.stat(path / "src" / "new.py").st_mode & 0o777 == 0o644  # git's mode is kept
    assert after2.restored is not None
    assert after2.restored.restored == ["a.txt", "b.txt", "src/new.py"]
    assert after2.restored.no_backup == ["gone.txt"]

    before2 = worktree_fork(
        session=story.session, turn=2, include_turn=False, slug="b2", with_files=True
    )
    path = repo / ".claude" / "worktrees" / "b2"
    assert before2.restored is not None and before2.restored.point == "before turn 2"
    assert (path / "a.txt").read_text() == "a after turn 1\n"
    assert not (path / "src" / "new.py").exists()


def test_paths_without_a_parent_folder_are_the_sessions_cwds(tmp_path: Path, repo: Path) -> None:
    old = Story(tmp_path / "claude" / "projects", repo, with_parent_dir=False)
    made = worktree_fork(session=old.session, turn=1, slug="old", with_files=True)
    assert made.restored is not None and made.restored.restored == ["a.txt", "b.txt"]


def test_a_new_file_takes_the_backups_mode(story: Story, repo: Path) -> None:
    run("rm", "-rq", "src", cwd=repo)
    run("commit", "-qm", "no src", cwd=repo)
    worktree_fork(session=story.session, turn=2, slug="mode", with_files=True)
    made = repo / ".claude" / "worktrees" / "mode" / "src" / "new.py"
    assert made.read_text() == "new after turn 2\n"
    assert os.stat(made).st_mode & 0o777 == 0o755


def test_the_last_turn_has_no_backup_so_only_the_conversation_is_forked(
    story: Story, repo: Path
) -> None:
    made = worktree_fork(session=story.session, turn=3, slug="last", with_files=True)
    assert made.restored is not None
    assert not made.restored.restored and "nothing holds them after turn 3" in made.restored.reason
    assert made.restored.describe().startswith("Only the conversation was forked")
    assert (repo / ".claude" / "worktrees" / "last" / "a.txt").read_text() == "a committed\n"


def test_a_session_without_backups_says_only_the_conversation_is_forked(
    tmp_path: Path, repo: Path
) -> None:
    from .test_worktrees import claude_session

    session = claude_session(tmp_path / "claude" / "projects", repo)
    made = worktree_fork(session=session, turn=1, slug="plain", with_files=True)
    assert made.restored is not None
    assert made.restored.reason == "Claude Code kept no backups of files for this session"


def test_nothing_is_written_through_a_link_or_outside_the_worktree(
    tmp_path: Path, repo: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "lib").symlink_to(outside)  # a committed link to a folder outside
    run("add", "-A", cwd=repo)
    run("commit", "-qm", "link", cwd=repo)
    root = tmp_path / "claude" / "projects"
    sid = str(uuid.uuid4())
    p1, p2 = str(uuid.uuid4()), str(uuid.uuid4())
    user1 = user_record("one", sid=sid, cwd=str(repo))
    user1["uuid"] = p1
    answer1 = assistant_record("a", sid=sid, parent=p1, cwd=str(repo))
    user2 = user_record("two", sid=sid, parent=answer1["uuid"], cwd=str(repo))
    user2["uuid"] = p2
    answer2 = assistant_record("b", sid=sid, parent=p2, cwd=str(repo))
    files = {
        "lib/evil.py": ("eeee@v2", 2),
        "../../escape.txt": ("eeee@v2", 2),
        "a.txt": ("../../../etc@v2", 2),  # not a backup name: ignored
        "hop.txt": ("link@v2", 2),  # the backup is a link: not followed
    }
    records = [snapshot(p1, {}), user1, answer1, snapshot(p2, files), user2, answer2]
    folder = root / agent_for("claude").project_folder_name(str(repo))
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl(records))
    history = root.parent / "file-history" / sid
    history.mkdir(parents=True)
    (history / "eeee@v2").write_text("evil\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    (history / "link@v2").symlink_to(secret)
    assert not sessions_import(roots=[root]).errors
    session = Session.objects.get(session_id=sid)

    made = worktree_fork(session=session, turn=1, slug="safe", with_files=True)
    assert made.restored is not None
    assert list(outside.iterdir()) == []
    assert (
        not (tmp_path / "escape.txt").exists() and not (tmp_path / "code" / "escape.txt").exists()
    )
    path = repo / ".claude" / "worktrees" / "safe"
    assert not (path / "hop.txt").exists()
    assert (path / "a.txt").read_text() == "a committed\n"
    assert made.restored.restored == []
    assert made.restored.no_backup == ["hop.txt"]
    assert "lib/evil.py: lib is a link in the worktree" in made.restored.skipped
    assert any(s.startswith("../../escape.txt: outside") for s in made.restored.skipped)


def test_git_folders_anywhere_and_the_marker_are_never_restored(tmp_path: Path, repo: Path) -> None:
    # A nested `.git` planted in the worktree would make its folder a repository whose
    # config and hooks git obeys there: backups never write one, at any depth.
    root = tmp_path / "claude" / "projects"
    sid = str(uuid.uuid4())
    p1, p2 = str(uuid.uuid4()), str(uuid.uuid4())
    user1 = user_record("one", sid=sid, cwd=str(repo))
    user1["uuid"] = p1
    answer1 = assistant_record("a", sid=sid, parent=p1, cwd=str(repo))
    user2 = user_record("two", sid=sid, parent=answer1["uuid"], cwd=str(repo))
    user2["uuid"] = p2
    answer2 = assistant_record("b", sid=sid, parent=p2, cwd=str(repo))
    files = {
        "sub/.git/hooks/post-checkout": ("hook@v2", 2),
        "sub/.git": ("hook@v2", 2),
        ".branchboard-worktree.json": ("hook@v2", 2),
        "sub/ok.txt": ("hook@v2", 2),
    }
    records = [snapshot(p1, {}), user1, answer1, snapshot(p2, files), user2, answer2]
    folder = root / agent_for("claude").project_folder_name(str(repo))
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl(records))
    history = root.parent / "file-history" / sid
    history.mkdir(parents=True)
    (history / "hook@v2").write_text("#!/bin/sh\necho planted\n")
    assert not sessions_import(roots=[root]).errors
    session = Session.objects.get(session_id=sid)

    made = worktree_fork(session=session, turn=1, slug="no-git", with_files=True)

    path = made.plan.path
    assert made.restored is not None and made.restored.restored == ["sub/ok.txt"]
    assert not (path / "sub" / ".git").exists()
    # A marker in the checkout would pass for an earlier version's mark: never restored.
    assert not (path / ".branchboard-worktree.json").exists()
    assert read_marker(path)["tool"] == "branchboard"
    assert sorted(made.restored.skipped) == [
        ".branchboard-worktree.json: git's or branchboard's own file; never restored",
        "sub/.git/hooks/post-checkout: git's or branchboard's own file; never restored",
        "sub/.git: git's or branchboard's own file; never restored",
    ]


def test_backups_of_a_fork_are_found_under_the_session_it_was_forked_from(
    story: Story, repo: Path
) -> None:
    asked = fork_input(turn=3, include_turn=True, title=None)
    branch = fork_where_asked(session=story.session, asked=asked, worktree=None).session
    made = worktree_fork(session=branch, turn=1, slug="of-branch", with_files=True)
    assert made.restored is not None and made.restored.restored == ["a.txt", "b.txt"]
    text = (repo / ".claude" / "worktrees" / "of-branch" / "a.txt").read_text()
    assert text == "a after turn 1\n"


def test_restoring_needs_a_worktree(story: Story) -> None:
    asked = fork_input(turn=1, include_turn=True, title=None)
    with pytest.raises(WorktreeRefused, match="needs a new worktree"):
        fork_where_asked(session=story.session, asked=asked, worktree=None, with_files=True)
    assert Session.objects.count() == 1


def test_the_page_offers_and_reports_the_files(client: Client, story: Story, repo: Path) -> None:
    page = client.get(f"/sessions/{story.sid}/").content.decode()
    assert 'id="worktree-with-files"' in page and "worktree-no-backups" not in page
    response = client.post(
        f"/sessions/{story.sid}/fork/",
        {"worktree": "1", "worktree_name": "page", "turn": "1", "with_files": "1"},
        follow=True,
    )
    shown = response.content.decode()
    assert "Files as they were after turn 1:" in shown
    assert "2 restored: a.txt, b.txt." in shown
    assert "1 removed (not there yet): src/new.py." in shown


def test_the_page_says_when_there_are_no_backups(
    client: Client, tmp_path: Path, repo: Path
) -> None:
    from .test_worktrees import claude_session

    session = claude_session(tmp_path / "claude" / "projects", repo)
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert 'id="worktree-no-backups"' in page and "worktree-with-files" not in page
    assert "only the conversation is forked" in page


def test_the_api_and_the_command_list_the_files(
    client: Client, story: Story, repo: Path, token: str
) -> None:
    response = client.post(
        f"/api/sessions/{story.sid}/fork",
        orjson.dumps({"turn": 2, "worktree": "api", "with_files": True}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    files = response.json()["worktree"]["files"]
    assert files["restored"] == ["a.txt", "b.txt", "src/new.py"]
    assert files["no_backup"] == ["gone.txt"] and files["only_conversation"] is False
    out = io.StringIO()
    call_command(
        "fork_session", story.sid, "--turn", "1", "--worktree", "cmd", "--with-files", stdout=out
    )
    assert "2 restored: a.txt, b.txt." in out.getvalue()
    assert (repo / ".claude" / "worktrees" / "cmd" / "b.txt").read_text() == "b after turn 1\n"


# The pure rules.


def test_an_older_snapshot_update_counts_like_a_delta() -> None:
    seen = Checkpoints()
    seen.add(snapshot("p1", {}))
    seen.add(snapshot("p1", {"a.txt": (None, 1)}, update=True))
    seen.add(snapshot("p2", {"a.txt": ("h@v2", 2)}))
    seen.add({"type": "file-history-snapshot", "messageId": 3, "snapshot": "x"})  # ignored
    seen.add({"type": "file-history-delta", "snapshotMessageId": "p2", "trackingPath": 5})
    at1, at2 = seen.state_at("p1"), seen.state_at("p2")
    assert at1 is not None and at1["a.txt"] is not None and at1["a.txt"].name is None
    assert at2 is not None and at2["a.txt"] is not None and at2["a.txt"].name == "h@v2"
    assert seen.state_at("p3") is None


def test_a_fork_keeps_the_checkpoints_of_its_prompts_before_or_after_them(story: Story) -> None:
    asked = fork_input(turn=2, include_turn=True, title=None)
    fork = fork_where_asked(session=story.session, asked=asked, worktree=None).session
    kept = [orjson.loads(line) for line in Path(fork.path).read_bytes().splitlines()]
    named = {
        (r["type"], r.get("snapshotMessageId") or r.get("messageId"))
        for r in kept
        if r["type"].startswith("file-history")
    }
    p1, p2, p3 = story.prompts
    # The snapshots come before their prompts in this file; the deltas after.
    assert ("file-history-snapshot", p1) in named and ("file-history-snapshot", p2) in named
    assert ("file-history-delta", p1) in named and ("file-history-delta", p2) in named
    assert not any(prompt == p3 for _, prompt in named)
