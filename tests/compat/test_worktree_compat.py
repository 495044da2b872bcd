"""The real CLIs resume a fork made into a git worktree, from inside that worktree.

A session is made by the real CLI in a git repository, forked at turn 2 into a new
worktree with `fork_session --worktree`, and resumed with `cd <worktree> && <cli>
--resume <id>` as the command prints it: the model must see exactly turns 1-2, and
a shell command the model asks for must run in the worktree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.clis import CliHome, run_claude, run_qwen
from tests.compat.fake_model import FakeModel
from tests.compat.test_fork_compat import Agent, upto
from tests.test_worktrees import run as git

pytestmark = [pytest.mark.compat, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _no_busy_wait(settings) -> None:
    settings.BRANCHBOARD_BUSY_SECONDS = 0


@pytest.fixture(params=["claude", "qwen"])
def agent(request, clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome) -> Agent:
    repo = cli_home.cwd
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "README.md").write_text("demo\n")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "start", cwd=repo)
    return Agent(request.param, clis[request.param], fake_model, cli_home)


def test_a_fork_into_a_worktree_resumes_there_with_the_chosen_history(agent: Agent) -> None:
    prompts = ["alpha one", "RUN: echo tool-output-two", "gamma three"]
    sid = agent.session(prompts)
    agent.import_all()
    full = agent.control(sid, "next question")
    agent.import_all()

    info = agent.command("fork_session", sid, "--turn", "2", "--worktree", "carry-on")

    worktree = Path(info["worktree"]["path"])
    folder = ".claude" if agent.name == "claude" else ".qwen"
    assert worktree == agent.home.cwd / folder / "worktrees" / "carry-on"
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=worktree) == "worktree-carry-on"
    assert info["resume_command"].startswith(f"cd {worktree} && {agent.name} --resume ")
    assert info["turns"] == 2

    agent.fm.clear()
    run = run_claude if agent.name == "claude" else run_qwen
    result = run(
        agent.home.home,
        worktree,
        agent.fm,
        ["RUN: pwd", "--resume", info["session_id"]],
        executable=agent.exe,
    )
    assert result.session_id == info["session_id"], result.stderr
    mains = agent.fm.main_requests()
    assert not agent.fm.egress_attempts
    # The history is turns 1 and 2, as in the source.
    assert mains[0].conversation == [*upto(full, "gamma three"), ("user", "RUN: pwd")]
    # The shell ran in the worktree.
    results = [text for role, text in mains[-1].conversation if role == "tool_result"]
    assert results and str(worktree) in results[-1]


def test_a_fork_into_a_worktree_brings_back_the_files_of_that_turn(
    clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome
) -> None:
    """Real backups: the real claude edits files against the fake model (Write, then a
    shell command on a file it tracks), and a fork at a turn gets those files back."""
    repo = cli_home.cwd
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "a.txt").write_text("a committed\n")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "start", cwd=repo)
    agent = Agent("claude", clis["claude"], fake_model, cli_home)
    prompts = [
        f"WRITE: {repo}/b.txt :: beta one",
        "RUN: printf 'beta two' > b.txt",
        f"WRITE: {repo}/c.txt :: gamma",
        "delta four",
    ]
    sid = agent.session(prompts)
    history = cli_home.home / ".claude" / "file-history" / sid
    assert sorted(p.name.split("@")[1] for p in history.iterdir()) == ["v2", "v2", "v3"]
    agent.import_all()
    full = agent.control(sid, "next question")
    agent.import_all()

    made = {}
    for turn in ("1", "2", "3"):
        made[turn] = agent.command(
            "fork_session",
            sid,
            "--turn",
            turn,
            "--worktree",
            f"t{turn}",
            "--with-files",
            "--leave-changes",
        )
    files = {turn: info["worktree"]["files"] for turn, info in made.items()}
    trees = {turn: Path(info["worktree"]["path"]) for turn, info in made.items()}
    assert files["1"]["restored"] == ["b.txt"] and files["1"]["point"] == "after turn 1"
    assert (trees["1"] / "b.txt").read_text() == "beta one"
    assert files["2"]["restored"] == ["b.txt"]
    assert (trees["2"] / "b.txt").read_text() == "beta two"
    assert not (trees["2"] / "c.txt").exists()
    assert files["3"]["restored"] == ["b.txt", "c.txt"]
    assert (trees["3"] / "c.txt").read_text() == "gamma"
    for tree in trees.values():
        assert (tree / "a.txt").read_text() == "a committed\n"  # never edited: as committed
    # The source's own files are as the CLI left them.
    assert (repo / "b.txt").read_text() == "beta two" and (repo / "c.txt").read_text() == "gamma"

    # Resumed in the turn-2 worktree: the history of turns 1-2, and the code of turn 2.
    fake_model.clear()
    result = run_claude(
        cli_home.home,
        trees["2"],
        fake_model,
        ["RUN: cat b.txt", "--resume", made["2"]["session_id"]],
        executable=clis["claude"],
    )
    assert result.session_id == made["2"]["session_id"], result.stderr
    mains = fake_model.main_requests()
    assert not fake_model.egress_attempts
    assert mains[0].conversation == [*upto(full, prompts[2]), ("user", "RUN: cat b.txt")]
    results = [text for role, text in mains[-1].conversation if role == "tool_result"]
    assert results and results[-1].startswith("beta two")
