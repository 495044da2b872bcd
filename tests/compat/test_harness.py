"""The harness itself: the fake model speaks both APIs, and the real CLIs run,
write their session files where documented, resume, and call tools."""

from __future__ import annotations

import itertools
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.compat.clis import (
    CliHome,
    claude_session_file,
    project_dir_name,
    qwen_session_file,
    read_jsonl,
    run_claude,
    run_qwen,
)
from tests.compat.fake_model import FakeModel, Recorded

pytestmark = pytest.mark.compat


# ---------------------------------------------------------------- helpers


def _post(fm: FakeModel, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    req = urllib.request.Request(
        fm.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers.get("Content-Type", ""), resp.read()


def _sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
        if "data" in lines:
            events.append((lines.get("event", ""), json.loads(lines["data"])))
    return events


def _assert_prefix_chain(mains: list[Recorded]) -> None:
    """Each main request's conversation extends the previous one's."""
    convs = [m.conversation for m in mains]
    for before, after in itertools.pairwise(convs):
        assert after[: len(before)] == before, (before, after)


def _assert_no_egress(fm: FakeModel) -> None:
    assert fm.egress_attempts == [], fm.egress_attempts


# ---------------------------------------------------------------- the fake server alone


def test_fake_anthropic_streaming_and_json(fake_model: FakeModel) -> None:
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi there"}]}
    ctype, raw = _post(fake_model, "/v1/messages", {**body, "stream": True})
    assert ctype.startswith("text/event-stream")
    events = _sse_events(raw)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == "reply to: hi there"
    assert events[-2][1]["usage"]["output_tokens"] >= 1

    _, raw = _post(fake_model, "/v1/messages", body)
    message = json.loads(raw)
    assert message["content"] == [{"type": "text", "text": "reply to: hi there"}]
    assert message["usage"]["input_tokens"] >= 1 and message["usage"]["output_tokens"] >= 1

    _, raw = _post(fake_model, "/v1/messages/count_tokens", body)
    assert json.loads(raw)["input_tokens"] >= 1


def test_fake_anthropic_tool_call(fake_model: FakeModel) -> None:
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    body = {
        "model": "m",
        "max_tokens": 10,
        "tools": tools,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "RUN: echo hi"}]}],
    }
    events = _sse_events(_post(fake_model, "/v1/messages", body)[1])
    start = next(d for n, d in events if n == "content_block_start")["content_block"]
    assert start["type"] == "tool_use" and start["name"] == "Bash"
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta")
    assert json.loads(partial) == {"command": "echo hi"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"

    body["messages"] += [
        {"role": "assistant", "content": [dict(start, input={"command": "echo hi"})]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": start["id"], "content": "hi\n"}],
        },
    ]
    body["stream"] = False
    message = json.loads(_post(fake_model, "/v1/messages", body)[1])
    assert message["content"][0]["text"] == "done: hi"
    assert [r.is_main for r in fake_model.requests] == [True, True]
    assert fake_model.conversation() == [
        ("user", "RUN: echo hi"),
        ("tool_use", 'Bash {"command": "echo hi"}'),
        ("tool_result", "hi"),
    ]


def test_fake_openai_streaming_json_and_models(fake_model: FakeModel) -> None:
    tools = [{"type": "function", "function": {"name": "run_shell_command", "parameters": {}}}]
    body: dict[str, Any] = {
        "model": "m",
        "tools": tools,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "RUN: echo hi"},
        ],
    }
    _, raw = _post(fake_model, "/chat/completions", body)
    lines = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    calls = [
        c
        for ch in chunks
        for choice in ch["choices"]
        for c in choice["delta"].get("tool_calls", [])
    ]
    assert calls[0]["function"]["name"] == "run_shell_command"
    assert json.loads(calls[0]["function"]["arguments"]) == {"command": "echo hi"}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1

    body["stream"] = False
    body["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [dict(calls[0], type="function")]},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "hi"},
    ]
    completion = json.loads(_post(fake_model, "/v1/chat/completions", body)[1])
    assert completion["choices"][0]["message"]["content"] == "done: hi"
    assert completion["usage"]["prompt_tokens"] >= 1

    with urllib.request.urlopen(fake_model.url + "/v1/models", timeout=10) as resp:
        assert json.loads(resp.read())["data"][0]["id"]
    with urllib.request.urlopen(fake_model.url + "/something/else", timeout=10) as resp:
        assert resp.status == 200
    assert fake_model.unknown_paths == ["GET /something/else"]
    assert len(fake_model.main_requests()) == 2


def test_side_requests_are_not_main(fake_model: FakeModel) -> None:
    _post(
        fake_model,
        "/v1/messages",
        {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]},
    )
    memory = {
        "model": "m",
        "tools": [{"type": "function", "function": {"name": "read_file"}}],
        "messages": [
            {
                "role": "system",
                "content": "You are now acting as the managed memory extraction subagent for an AI",
            },
            {"role": "user", "content": "scan"},
        ],
    }
    _post(fake_model, "/v1/chat/completions", memory)
    assert fake_model.main_requests() == []
    assert len(fake_model.side_requests()) == 2


# ---------------------------------------------------------------- claude


def test_claude_two_turns_and_resume(
    clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome
) -> None:
    home, cwd = cli_home.home, cli_home.cwd
    first = run_claude(home, cwd, fake_model, ["first prompt p1"], executable=clis["claude"])
    sid = first.session_id
    assert sid and first.result_text == "reply to: first prompt p1"
    path = claude_session_file(home, cwd, sid)
    assert path.parent.name == project_dir_name(cwd)
    assert path.is_file(), sorted(str(p) for p in (home / ".claude").rglob("*.jsonl"))

    second = run_claude(
        home, cwd, fake_model, ["second prompt p2", "--resume", sid], executable=clis["claude"]
    )
    assert second.result_text == "reply to: second prompt p2"
    # Claude Code 2.1.328: `-p --resume ID` keeps the id and appends to the same file.
    assert second.session_id == sid
    assert sorted(p.name for p in path.parent.glob("*.jsonl")) == [path.name]

    mains = fake_model.main_requests()
    assert len(mains) == 2
    assert fake_model.conversation() == [
        ("user", "first prompt p1"),
        ("assistant", "reply to: first prompt p1"),
        ("user", "second prompt p2"),
    ]
    _assert_prefix_chain(mains)
    records = read_jsonl(path)
    users = [r["message"]["content"] for r in records if r.get("type") == "user"]
    assert users == ["first prompt p1", "second prompt p2"]
    assert {r["sessionId"] for r in records if "sessionId" in r} == {sid}
    _assert_no_egress(fake_model)


def test_claude_tool_call(clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome) -> None:
    home, cwd = cli_home.home, cli_home.cwd
    run = run_claude(home, cwd, fake_model, ["RUN: echo hi"], executable=clis["claude"])
    assert run.result_text == "done: hi"
    mains = fake_model.main_requests()
    assert len(mains) == 2
    assert fake_model.conversation() == [
        ("user", "RUN: echo hi"),
        ("tool_use", 'Bash {"command": "echo hi"}'),
        ("tool_result", "hi"),
    ]
    _assert_prefix_chain(mains)
    assert run.session_id
    records = read_jsonl(claude_session_file(home, cwd, run.session_id))
    results = [
        block
        for r in records
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for block in r["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert [b["content"] for b in results] == ["hi"]
    _assert_no_egress(fake_model)


# ---------------------------------------------------------------- qwen


def test_qwen_two_turns_and_resume(
    clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome
) -> None:
    home, cwd = cli_home.home, cli_home.cwd
    first = run_qwen(home, cwd, fake_model, ["first prompt p1"], executable=clis["qwen"])
    sid = first.session_id
    assert sid and first.result_text == "reply to: first prompt p1"
    path = qwen_session_file(home, cwd, sid)
    assert path.parent.parent.name == project_dir_name(cwd)
    assert path.is_file(), sorted(str(p) for p in (home / ".qwen").rglob("*.jsonl"))

    second = run_qwen(
        home, cwd, fake_model, ["second prompt p2", "--resume", sid], executable=clis["qwen"]
    )
    assert second.result_text == "reply to: second prompt p2"
    # Qwen Code 0.24.4: `--resume ID` keeps the id and appends to the same file.
    assert second.session_id == sid
    assert sorted(p.name for p in path.parent.glob("*.jsonl")) == [path.name]

    mains = fake_model.main_requests()
    assert len(mains) == 2
    assert fake_model.conversation() == [
        ("user", "first prompt p1"),
        ("assistant", "reply to: first prompt p1"),
        ("user", "second prompt p2"),
    ]
    _assert_prefix_chain(mains)
    records = read_jsonl(path)
    users = [r["message"]["parts"][0]["text"] for r in records if r.get("type") == "user"]
    assert users == ["first prompt p1", "second prompt p2"]
    assert {r["sessionId"] for r in records} == {sid}
    _assert_no_egress(fake_model)


def test_qwen_tool_call(clis: dict[str, Path], fake_model: FakeModel, cli_home: CliHome) -> None:
    home, cwd = cli_home.home, cli_home.cwd
    run = run_qwen(home, cwd, fake_model, ["RUN: echo hi"], executable=clis["qwen"])
    mains = fake_model.main_requests()
    assert len(mains) == 2
    conv = fake_model.conversation()
    assert conv[:2] == [
        ("user", "RUN: echo hi"),
        ("tool_use", 'run_shell_command {"command": "echo hi"}'),
    ]
    assert conv[2][0] == "tool_result" and "Output: hi" in conv[2][1]
    assert len(conv) == 3
    assert run.result_text == f"done: {conv[2][1][:40]}"
    _assert_prefix_chain(mains)
    assert run.session_id
    records = read_jsonl(qwen_session_file(home, cwd, run.session_id))
    results = [r for r in records if r.get("type") == "tool_result"]
    assert len(results) == 1
    response = results[0]["message"]["parts"][0]["functionResponse"]
    assert response["name"] == "run_shell_command" and "hi" in response["response"]["output"]
    _assert_no_egress(fake_model)
