"""The selective decode gives what the whole decode gives, or steps aside for it."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.formats import claude, detect_agent_from_path, qwen
from sessions_app.formats.claude import index as claude_index
from sessions_app.formats.qwen import index as qwen_index

from .corpus import FIXTURES

FAST = {"claude": claude_index.parse_indexed, "qwen": qwen_index.parse_indexed}
WHOLE = {"claude": claude.parse_whole, "qwen": qwen.parse_whole}
LINES = [
    (detect_agent_from_path(path), raw)
    for path in sorted(FIXTURES.rglob("*.jsonl"))
    for raw in path.read_bytes().splitlines(keepends=True)
]
ODD = [
    None, 0, -1, 2**31, 2**64, 1.5, True, "", "x" * 70, "a\x00b", [], {}, [1], {"a": 1},
    "2026-01-01T00:00:00Z", "9999-12-31T23:00:00-14:00", "<synthetic>", "tool_result",
    "text", "image", "task_notification", "<command-name>/x</command-name>",
    "<local-command-stdout>x", "  hi", 10**30,
]  # fmt: skip
KEYS = [
    "type", "subtype", "uuid", "parentUuid", "sessionId", "timestamp", "isMeta",
    "isCompactSummary", "toolUseResult", "turnOrigin", "promptSource", "forkedFrom",
    "leafUuid", "summary", "customTitle", "cwd", "gitBranch", "isSidechain", "model",
    "usageMetadata", "systemPayload", "message",
]  # fmt: skip


def same(agent: str, raw: bytes) -> bool:
    fast = FAST[agent](raw)
    return fast is None or fast == WHOLE[agent](raw)


def test_every_fixture_line_reads_the_same_and_takes_the_fast_path() -> None:
    assert len(LINES) > 1000
    assert [raw[:120] for agent, raw in LINES if not same(agent, raw)] == []
    slow = [raw[:120] for agent, raw in LINES if raw.strip() and FAST[agent](raw) is None]
    assert len(slow) < len(LINES) // 50  # the fast path is the common one


@settings(max_examples=400, deadline=None)
@given(
    pick=st.integers(0, 10**6),
    key=st.sampled_from(KEYS),
    value=st.sampled_from(ODD),
    inner=st.booleans(),
)
def test_a_changed_field_reads_the_same_either_way(
    pick: int, key: str, value: object, inner: bool
) -> None:
    agent, raw = LINES[pick % len(LINES)]
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return
    if not isinstance(data, dict):
        return
    message = data.get("message")
    if inner and isinstance(message, dict):
        message = dict(message)
        for name in ("usage", "usageMetadata"):
            if isinstance(message.get(name), dict):
                usage = dict(message[name])
                usage[next(iter(usage), "input_tokens")] = value
                message[name] = usage
        message[key if key in ("model", "id", "content", "parts") else "model"] = value
        data["message"] = message
    else:
        data[key] = value
    line = json.dumps(data).encode() + b"\n"  # orjson refuses ints past 64 bits
    assert same(agent, line), line[:300]


@pytest.mark.parametrize(
    "raw",
    [b"", b"\n", b"{", b"[1]\n", b'"x"\n', b"\xff\xfe{}\n", b'{"type":"user","message":1}\n'],
)
def test_broken_lines_read_the_same(raw: bytes) -> None:
    for agent in FAST:
        assert same(agent, raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type":"ai-title","aiTitle":"Fix the login bug","sessionId":"s"}\n',
        b'{"type":"ai-title","aiTitle":7}\n',
        b'{"type":"custom-title","customTitle":"mine","aiTitle":"not this"}\n',
    ],
)
def test_title_records_read_the_same(raw: bytes) -> None:
    assert same("claude", raw)
    record = claude.parse_line(raw)
    assert record.kind == "title"
