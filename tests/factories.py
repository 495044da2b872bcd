"""Small Claude Code sessions made in a test: records as the CLI writes them, and their files."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson

START = "2026-01-01T00:00:00.000Z"
CWD = "/work/demo"


def user_record(
    content: str | list[dict[str, Any]],
    *,
    sid: str,
    parent: str | None = None,
    uuid_: str | None = None,
    timestamp: str = START,
    cwd: str = CWD,
) -> dict[str, Any]:
    """A `user` record: a prompt (text) or tool results (a list of blocks)."""
    return {
        "type": "user",
        "uuid": uuid_ or str(uuid.uuid4()),
        "parentUuid": parent,
        "sessionId": sid,
        "timestamp": timestamp,
        "cwd": cwd,
        "message": {"role": "user", "content": content},
    }


def assistant_record(
    content: str | list[dict[str, Any]],
    *,
    sid: str,
    parent: str | None,
    uuid_: str | None = None,
    timestamp: str = START,
    cwd: str = CWD,
) -> dict[str, Any]:
    """An `assistant` record: a text reply, or the content blocks given."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return {
        "type": "assistant",
        "uuid": uuid_ or str(uuid.uuid4()),
        "parentUuid": parent,
        "sessionId": sid,
        "timestamp": timestamp,
        "cwd": cwd,
        "message": {
            "id": f"msg_{uuid.uuid4().hex}",
            "role": "assistant",
            "model": "claude-test",
            "content": blocks,
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
    }


def tool_result(tool_use_id: str, output: str) -> list[dict[str, Any]]:
    """The content of a `user` record that answers a tool call."""
    return [{"type": "tool_result", "tool_use_id": tool_use_id, "content": output}]


def jsonl(records: list[dict[str, Any]]) -> bytes:
    """Records as the lines of a session file."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def write_session(folder: Path, records: list[dict[str, Any]]) -> Path:
    """Write `records` to `folder/<their session id>.jsonl`; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{records[0]['sessionId']}.jsonl"
    path.write_bytes(jsonl(records))
    return path


def one_turn(sid: str, prompt: str, reply: str, *, cwd: str = CWD) -> list[dict[str, Any]]:
    """A prompt and its reply (record ids `u1` and `a1`)."""
    user = user_record(prompt, sid=sid, uuid_="u1", cwd=cwd)
    answer = assistant_record(
        reply, sid=sid, parent="u1", uuid_="a1", timestamp="2026-01-01T00:00:01.000Z", cwd=cwd
    )
    return [user, answer]


def make_session(
    root: Path, turns: int, *, project: str = "-work-demo"
) -> tuple[Path, list[dict[str, Any]]]:
    """A session file under `root/project` with `turns` prompt/answer pairs, one a minute."""
    sid = str(uuid.uuid4())
    records: list[dict[str, Any]] = []
    parent = None
    for n in range(turns):
        user = user_record(
            f"prompt {n + 1}", sid=sid, parent=parent, timestamp=f"2026-01-01T00:{n:02d}:00.000Z"
        )
        answer = assistant_record(
            f"answer {n + 1}",
            sid=sid,
            parent=user["uuid"],
            timestamp=f"2026-01-01T00:{n:02d}:30.000Z",
        )
        records += [user, answer]
        parent = answer["uuid"]
    folder = root / project
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(jsonl(records))
    return path, records


EVIL = "<script>alert(1)</script> <img src=x onerror=alert(2)> [click me](javascript:alert(3))"


def write_evil_session(root: Path) -> str:
    """A session whose prompt, reply and tool output try to run script; returns its id."""
    sid = str(uuid.uuid4())
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": EVIL}}
    records = [
        user_record(EVIL, sid=sid, uuid_="u1", cwd="/evil"),
        assistant_record(
            [{"type": "text", "text": EVIL}, call],
            sid=sid,
            parent="u1",
            uuid_="a1",
            timestamp="2026-01-01T00:00:01.000Z",
            cwd="/evil",
        ),
        user_record(
            tool_result("t1", EVIL),
            sid=sid,
            parent="a1",
            uuid_="r1",
            timestamp="2026-01-01T00:00:02.000Z",
            cwd="/evil",
        ),
    ]
    write_session(root / "-evil", records)
    return sid


# A session that grows: turns with a shell call, its output and a long answer.

LONG = "\n\n".join(f"Paragraph {n} of a long answer, to make the page scroll." for n in range(30))


def turn(sid: str, parent: str | None, n: int) -> list[dict]:
    """Prompt n, a shell call with its output, and a long answer."""
    user = user_record(f"prompt {n}", sid=sid, parent=parent)
    call_id = f"toolu_{uuid.uuid4().hex[:12]}"
    call = assistant_record(
        [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": f"echo {n}"}}],
        sid=sid,
        parent=user["uuid"],
    )
    result = user_record(tool_result(call_id, f"output of turn {n}"), sid=sid, parent=call["uuid"])
    answer = assistant_record(f"answer {n}\n\n{LONG}", sid=sid, parent=result["uuid"])
    return [user, call, result, answer]


def session_file(root: Path, turns: int) -> tuple[Path, list[dict]]:
    sid = str(uuid.uuid4())
    records: list[dict] = []
    for n in range(1, turns + 1):
        records += turn(sid, records[-1]["uuid"] if records else None, n)
    folder = root / "-work-live"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(jsonl(records))
    return path, records


def grow(path: Path, records: list[dict], n: int) -> None:
    new = turn(records[0]["sessionId"], records[-1]["uuid"], n)
    records += new
    with path.open("ab") as f:
        f.write(jsonl(new))
