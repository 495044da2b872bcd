"""The real CLIs judge the forks: resume what branchboard made and check what the model sees.

Each test makes sessions with the real claude or qwen CLI against the loopback
fake model, imports them, branches/forks/rewinds with the management commands,
resumes the result with the real CLI, and compares the conversation the CLI sends
with the intended history. A byte copy of the source resumed the same way is the
control: it shows what "the whole history" looks like to that CLI.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command

from sessions_app.models import Session
from tests.compat.clis import (
    CliHome,
    claude_session_file,
    qwen_session_file,
    run_claude,
    run_qwen,
)
from tests.compat.fake_model import FakeModel

pytestmark = [pytest.mark.compat, pytest.mark.django_db]

FIXTURES = Path(__file__).parent.parent / "fixtures"
Conversation = list[tuple[str, str]]


@pytest.fixture(autouse=True)
def _no_busy_wait(settings) -> None:
    # The CLI wrote the file a moment ago; the test knows it has exited.
    settings.BRANCHBOARD_BUSY_SECONDS = 0


class Agent:
    """One CLI in a throwaway HOME: run prompts, find files, import, fork, resume."""

    def __init__(self, name: str, exe: Path, fm: FakeModel, home: CliHome) -> None:
        self.name, self.exe, self.fm, self.home = name, exe, fm, home

    @property
    def root(self) -> Path:
        return self.home.home / (".claude" if self.name == "claude" else ".qwen") / "projects"

    def run(self, prompt: str, resume: str | None = None) -> str:
        args = [prompt] + (["--resume", resume] if resume else [])
        runner: Callable = run_claude if self.name == "claude" else run_qwen
        result = runner(self.home.home, self.home.cwd, self.fm, args, executable=self.exe)
        assert result.session_id, result.stderr
        return result.session_id

    def file(self, sid: str) -> Path:
        locate = claude_session_file if self.name == "claude" else qwen_session_file
        path = locate(self.home.home, self.home.cwd, sid)
        # A session of another project folder (copied in) is found by its name.
        return path if path.exists() else next(self.root.rglob(f"{sid}.jsonl"), path)

    def session(self, prompts: list[str]) -> str:
        sid = self.run(prompts[0])
        for prompt in prompts[1:]:
            assert self.run(prompt, resume=sid) == sid
        return sid

    def import_all(self) -> None:
        call_command("import_sessions", "--root", str(self.root), stdout=io.StringIO())

    def command(self, name: str, *args: str) -> dict:
        out = io.StringIO()
        call_command(name, *args, "--json", stdout=out)
        return orjson.loads(out.getvalue())

    def resume_conversation(self, sid: str, prompt: str) -> Conversation:
        """Resume `sid` with `prompt`; the conversation of the CLI's first model call."""
        self.fm.clear()
        self.run(prompt, resume=sid)
        mains = self.fm.main_requests()
        assert mains, "the CLI made no model call"
        assert not self.fm.egress_attempts
        return mains[0].conversation

    def control(self, sid: str, prompt: str) -> Conversation:
        """What resuming an exact copy of `sid` sends: the whole history, as this CLI sees it."""
        copy_id = str(uuid.uuid4())
        shutil.copyfile(self.file(sid), self.file(sid).with_name(f"{copy_id}.jsonl"))
        return self.resume_conversation(copy_id, prompt)


def upto(conversation: Conversation, next_prompt: str) -> Conversation:
    """The history before `next_prompt` was sent."""
    return conversation[: conversation.index(("user", next_prompt))]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=["claude", "qwen"])
def agent(request, clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome) -> Agent:
    return Agent(request.param, clis[request.param], fake_model, cli_home)


def test_branch_and_forks_resume_with_exactly_the_chosen_history(agent: Agent) -> None:
    prompts = ["alpha one", "RUN: echo tool-output-two", "gamma three"]
    sid = agent.session(prompts)
    agent.import_all()
    source = agent.file(sid)
    before = digest(source)
    full = agent.control(sid, "next question")
    history = full[:-1]
    assert ("user", "alpha one") in history and any(role == "tool_result" for role, _ in history)

    branch = agent.command("fork_session", sid)
    assert branch["kind"] == "branch" and branch["turns"] == 3
    assert agent.resume_conversation(branch["session_id"], "next question") == full

    fork2 = agent.command("fork_session", sid, "--turn", "2")
    assert fork2["turns"] == 2
    expected = [*upto(full, "gamma three"), ("user", "next question")]
    assert agent.resume_conversation(fork2["session_id"], "next question") == expected

    before2 = agent.command("fork_session", sid, "--turn", "2", "--before")
    assert before2["turns"] == 1 and before2["prompt"] == prompts[1]
    edited = agent.resume_conversation(before2["session_id"], "RUN: echo edited")
    assert edited[:-1] == upto(full, prompts[1])
    assert edited[-1] == ("user", "RUN: echo edited")

    fork1 = agent.command("fork_session", sid, "--turn", "1")
    assert agent.resume_conversation(fork1["session_id"], "x") == [
        *upto(full, prompts[1]),
        ("user", "x"),
    ]
    assert digest(source) == before, "forking never touches the source"


def test_rewind_resumes_after_the_previous_turn_and_undo_restores(agent: Agent) -> None:
    prompts = ["first ask", "second ask", "third ask"]
    sid = agent.session(prompts)
    agent.import_all()
    source = agent.file(sid)
    original = source.read_bytes()
    full = agent.control(sid, "after rewind")
    agent.import_all()

    info = agent.command("rewind_session", sid, "--turn", "2")
    assert info["turns"] == 1
    if agent.name == "claude":
        assert agent.file(info["backup_id"]).is_file() and info["backup_id"] != sid
    else:
        assert source.read_bytes().startswith(original), "Qwen's rewind only appends"

    undone = agent.command("rewind_session", sid, "--undo")
    assert undone["turns"] == 3
    if agent.name == "claude":
        assert source.read_bytes() == original
        # The backup is a session the CLI resumes with the whole old history.
        assert agent.resume_conversation(info["backup_id"], "after rewind") == full

    agent.command("rewind_session", sid, "--turn", "2")
    expected = [*upto(full, "second ask"), ("user", "after rewind")]
    assert agent.resume_conversation(sid, "after rewind") == expected


def forks_tree(
    clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome
) -> tuple[Agent, Path, str]:
    """The corpus's Claude file with an in-CLI rewind tree, in the CLI's home, imported."""
    agent = Agent("claude", clis["claude"], fake_model, cli_home)
    name = "ff61fa45-6bd0-4f30-be46-c8dcac5a359b.jsonl"
    folder = agent.root / "-home-dev-code-forks"
    folder.mkdir(parents=True)
    tree = folder / name
    shutil.copyfile(FIXTURES / "cli/claude/-home-dev-code-forks" / name, tree)
    agent.import_all()
    return agent, tree, name.removesuffix(".jsonl")


def test_branch_of_a_claude_file_with_an_in_cli_rewind_tree(
    clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome
) -> None:
    agent, tree, sid = forks_tree(clis, fake_model, cli_home)
    before = digest(tree)
    full = agent.control(sid, "carry on")
    texts = "\n".join(text for _, text in full)
    assert "a different prompt after rewind" in texts
    assert "one more prompt in the branch" not in texts

    branch = agent.command("fork_session", sid)
    assert branch["turns"] == 3
    assert agent.resume_conversation(branch["session_id"], "carry on") == full
    # Turn 3's prompt went to the model in one message with the /branch output
    # before it; a fork at turn 2 keeps that output and drops the prompt.
    at = next(i for i, (_, text) in enumerate(full) if "a different prompt after rewind" in text)
    role, merged = full[at]
    expected = [*full[:at], (role, merged.replace("a different prompt after rewind", "carry on"))]
    fork = agent.command("fork_session", sid, "--turn", "2")
    assert agent.resume_conversation(fork["session_id"], "carry on") == expected
    assert digest(tree) == before


def test_an_abandoned_branch_brought_back_resumes_with_exactly_its_prompts(
    clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome
) -> None:
    agent, tree, sid = forks_tree(clis, fake_model, cli_home)
    before = digest(tree)
    full = agent.control(sid, "carry on")
    source = Session.objects.get(session_id=sid)
    (left,) = source.abandoned
    revived = agent.command("fork_session", sid, "--leaf", left["leaf_uuid"])
    assert revived["kind"] == "revived" and revived["turns"] == 3
    got = agent.resume_conversation(revived["session_id"], "carry on")
    texts = "\n".join(text for _, text in got)
    # The branch's own prompt is sent, the one the rewind replaced it with is not, and the
    # turns before the split are exactly the original's.
    assert left["prompt"] in texts and "a different prompt after rewind" not in texts
    at = next(i for i, (_, text) in enumerate(full) if "a different prompt after rewind" in text)
    assert got[:at] == full[:at]
    assert got[-1] == ("user", "carry on")
    assert digest(tree) == before
