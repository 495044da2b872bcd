"""The Codex harness: the real codex 0.169 runs against the fake model's Responses API,
writes its rollout where documented, and resumes a rollout found by id alone."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.compat.clis import (
    CODEX_VERSION,
    CliHome,
    codex_home,
    codex_session_file,
    codex_sessions,
    read_jsonl,
    run_codex,
)
from tests.compat.fake_model import FakeModel

pytestmark = pytest.mark.compat

FIXTURES = Path(__file__).parent.parent / "fixtures" / "cli" / "codex" / "sessions"
THREE_TURNS = "01a21760-a9c0-7191-881d-5cbb883febdf"
FORK = "01a21760-ae74-71f1-9af0-3a9c6ff18f96"


def _fresh_home(tmp_path: Path, name: str) -> CliHome:
    home = tmp_path / name
    (home / "project").mkdir(parents=True)
    return CliHome(home=home, cwd=home / "project")


def _copy_rollout(src: Path, sessions: Path, home: Path) -> Path:
    """Copy a rollout into home's CODEX_HOME/sessions at the same YYYY/MM/DD path."""
    dst = codex_home(home) / "sessions" / src.relative_to(sessions)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return dst


def _fixture(session_id: str) -> Path:
    (found,) = FIXTURES.rglob(f"rollout-*-{session_id}.jsonl")
    return found


def test_fake_model_refuses_the_websocket_and_streams_a_response(fake_model: FakeModel) -> None:
    upgrade = urllib.request.Request(
        fake_model.openai_url + "/responses",
        headers={"Connection": "Upgrade", "Upgrade": "websocket"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(upgrade, timeout=10)
    assert refused.value.code == 426
    body = {"model": "m", "stream": True, "input": [{"role": "user", "content": "hi"}]}
    post = urllib.request.Request(
        fake_model.openai_url + "/responses",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(post, timeout=10) as resp:
        raw = resp.read().decode()
    events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["usage"]["input_tokens"] > 0
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == (
        "reply to: hi"
    )
    assert fake_model.requests[-1].prompts == ["hi"]


def test_codex_writes_a_rollout_and_a_copy_resumes_with_its_history(
    codex_cli: Path, fake_model: FakeModel, cli_home: CliHome, tmp_path: Path
) -> None:
    first = run_codex(cli_home.home, cli_home.cwd, fake_model, ["RUN: echo compat-hello"])
    assert first.session_id
    rollout = codex_session_file(cli_home.home, first.session_id)
    year, month, day = rollout.relative_to(codex_home(cli_home.home) / "sessions").parts[:3]
    assert rollout.name.startswith(f"rollout-{year}-{month}-{day}T")
    records = read_jsonl(rollout)
    meta = records[0]
    assert meta["type"] == "session_meta"
    assert meta["payload"]["id"] == first.session_id
    assert meta["payload"]["cwd"] == str(cli_home.cwd)
    assert meta["payload"]["cli_version"] == CODEX_VERSION
    calls = [r["payload"] for r in records if r["payload"].get("type") == "function_call"]
    assert [c["name"] for c in calls] == ["exec_command"]
    outputs = [r["payload"] for r in records if r["payload"].get("type") == "function_call_output"]
    assert "compat-hello" in outputs[0]["output"]

    # The rollout alone, in a fresh CODEX_HOME without any SQLite database, is found by id.
    other = _fresh_home(tmp_path, "other")
    copy = _copy_rollout(rollout, codex_home(cli_home.home) / "sessions", other.home)
    assert not list(codex_home(other.home).glob("*.sqlite"))
    fake_model.clear()
    again = run_codex(other.home, other.cwd, fake_model, ["resume", first.session_id, "next"])
    assert again.session_id == first.session_id
    sent = [r for r in fake_model.requests if r.api == "responses"]
    assert sent and sent[-1].prompts == ["RUN: echo compat-hello", "next"]
    assert ("tool_use", 'exec_command {"cmd": "echo compat-hello"}') in sent[-1].conversation
    assert codex_sessions(other.home) == [copy]  # appended to the same file
    assert read_jsonl(copy)[-1]["payload"]["type"] == "task_complete"
    assert fake_model.egress_attempts == []


def test_codex_resumes_the_three_turn_fixture_with_exactly_its_prompts(
    codex_cli: Path, fake_model: FakeModel, cli_home: CliHome
) -> None:
    _copy_rollout(_fixture(THREE_TURNS), FIXTURES, cli_home.home)
    run = run_codex(cli_home.home, cli_home.cwd, fake_model, ["resume", THREE_TURNS, "next"])
    assert run.session_id == THREE_TURNS
    (sent,) = [r for r in fake_model.requests if r.api == "responses"]
    assert sent.prompts == [
        "RUN: ls -1",
        "PATCH: notes.txt :: first note",
        "thanks, that is all",
        "next",
    ]


def test_codex_fork_resumes_only_beside_its_parent(
    codex_cli: Path, fake_model: FakeModel, cli_home: CliHome, tmp_path: Path
) -> None:
    # 0.169's fork holds no copy of its parent's lines (`history_base`), so alone it fails.
    _copy_rollout(_fixture(FORK), FIXTURES, cli_home.home)
    alone = run_codex(cli_home.home, cli_home.cwd, fake_model, ["resume", FORK, "x"], check=False)
    assert alone.returncode != 0
    assert "missing source rollout" in alone.stderr
    both = _fresh_home(tmp_path, "both")
    _copy_rollout(_fixture(FORK), FIXTURES, both.home)
    _copy_rollout(_fixture(THREE_TURNS), FIXTURES, both.home)
    fake_model.clear()
    run = run_codex(both.home, both.cwd, fake_model, ["resume", FORK, "next"])
    assert run.session_id == FORK
    (sent,) = [r for r in fake_model.requests if r.api == "responses"]
    assert sent.prompts == [
        "RUN: ls -1",
        "PATCH: notes.txt :: first note",
        "thanks, that is all",
        "a prompt in the fork",
        "next",
    ]


ROLLBACK = "01a21766-d893-7641-a0b8-5e71d683dc54"
COMPACTION = "01a21766-de59-75e3-9552-c2130690b4b1"


def test_codex_resume_honours_its_own_rollback_segment(
    codex_cli: Path, fake_model: FakeModel, cli_home: CliHome
) -> None:
    # thread/revert left the first file whole and wrote a second one for the same thread.
    files = sorted(FIXTURES.rglob(f"rollout-*-{ROLLBACK}*.jsonl"))
    assert len(files) == 2
    for path in files:
        _copy_rollout(path, FIXTURES, cli_home.home)
    run = run_codex(cli_home.home, cli_home.cwd, fake_model, ["resume", ROLLBACK, "next"])
    assert run.session_id == ROLLBACK
    (sent,) = [r for r in fake_model.requests if r.api == "responses"]
    assert sent.prompts == [
        "first prompt",
        "second prompt",
        "third prompt, after the rollback",
        "next",
    ]


def test_codex_resume_after_its_compaction_sends_the_replacement_history(
    codex_cli: Path, fake_model: FakeModel, cli_home: CliHome
) -> None:
    _copy_rollout(_fixture(COMPACTION), FIXTURES, cli_home.home)
    run_codex(cli_home.home, cli_home.cwd, fake_model, ["resume", COMPACTION, "next"])
    (sent,) = [r for r in fake_model.requests if r.api == "responses"]
    assert sent.prompts == ["before compaction one", "RUN: echo two", "after compaction", "next"]
    assert (
        "compaction",
        "fake-compaction: before compaction one | RUN: echo two",
    ) in sent.conversation
    # The tool call before the compaction is not in the replacement history.
    assert not any(role == "tool_use" for role, _ in sent.conversation)
