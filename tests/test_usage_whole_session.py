"""A session's usage is the whole session: its subagents, sidechains and abandoned branches too.

Older Claude Code releases kept a subagent's messages only inside the parent's
`progress` records (`data.type: agent_progress`, the assistant message nested in
`data.message`), with no file of its own: those messages count, once, however
many progress records repeat them and whether or not a subagent file holds them too.
"""

from __future__ import annotations

import csv
import io
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from sessions_app.formats.usage import MessageUsage, claude_usage
from sessions_app.models import Session, Usage
from sessions_app.selectors.usage import usage_by_day
from sessions_app.selectors.usage.sessions import session_usage
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

from .factories import jsonl, user_record
from .test_usage import SONNET, streamed

pytestmark = pytest.mark.django_db
AGENT = "a2898e3"
DAY = "2026-03-01T10:00:00.000Z"


def _usage(output: int) -> dict[str, Any]:
    return {
        "input_tokens": 7,
        "output_tokens": output,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 2000,
    }


def progress(sid: str, parent: str, msg: str, output: int, *, agent: str = AGENT) -> dict:
    """A parent's `agent_progress` record carrying one of its subagent's API messages."""
    return {
        "type": "progress",
        "uuid": str(uuid.uuid4()),
        "parentUuid": parent,
        "sessionId": sid,
        "isSidechain": False,
        "timestamp": DAY,
        "toolUseID": f"agent_{msg}",
        "parentToolUseID": "toolu_task",
        "data": {
            "type": "agent_progress",
            "agentId": agent,
            "prompt": "explore",
            "normalizedMessages": [],
            "message": {
                "type": "assistant",
                "timestamp": DAY,
                "requestId": f"req_{msg}",
                "uuid": str(uuid.uuid4()),
                "message": {
                    "id": msg,
                    "type": "message",
                    "role": "assistant",
                    "model": SONNET,
                    "content": [{"type": "text", "text": "looking"}],
                    "usage": _usage(output),
                },
            },
        },
    }


def subagent_record(sid: str, parent: str | None, msg: str, output: int) -> dict:
    """The same message as the subagent's own file (newer releases) holds it."""
    return {
        "type": "assistant",
        "uuid": str(uuid.uuid4()),
        "parentUuid": parent,
        "sessionId": sid,
        "isSidechain": True,
        "agentId": AGENT,
        "timestamp": DAY,
        "requestId": f"req_{msg}",
        "message": {
            "id": msg,
            "role": "assistant",
            "model": SONNET,
            "content": [{"type": "text", "text": "looking"}],
            "usage": _usage(output),
        },
    }


def session_with_progress(root: Path, *, subagent_file: bool) -> tuple[str, Path]:
    """One turn whose Task call's subagent wrote two API messages, each seen in two progress
    records; with `subagent_file`, the subagent's own file holds them as well."""
    sid = str(uuid.uuid4())
    user = user_record("explore the code", sid=sid, timestamp="2026-03-01T09:59:00.000Z")
    call = streamed(sid, user["uuid"], f"msg_call_{sid[:8]}", [10])
    records: list[dict] = [user, *call]
    parent = call[-1]["uuid"]
    for msg, output in (("msg_sub_one", 40), ("msg_sub_two", 60)):
        for _ in range(2):  # the CLI repeats a message in several progress records
            records.append(progress(sid, parent, f"{msg}_{sid[:8]}", output))
            parent = records[-1]["uuid"]
    folder = root / "-work-demo"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(jsonl(records))
    if subagent_file:
        subagents = folder / sid / "subagents"
        subagents.mkdir(parents=True)
        first = subagent_record(sid, None, f"msg_sub_one_{sid[:8]}", 40)
        second = subagent_record(sid, first["uuid"], f"msg_sub_two_{sid[:8]}", 60)
        (subagents / f"agent-{AGENT}.jsonl").write_bytes(jsonl([first, second]))
    for file in folder.rglob("*.jsonl"):
        old = file.stat().st_mtime - 120
        os.utime(file, (old, old))
    return sid, path


def _refresh(root: Path) -> None:
    sessions_import(roots=[root])
    report = usage_refresh()
    assert not report.errors, report.errors


def test_a_subagent_message_inside_a_progress_record_is_its_usage() -> None:
    record = progress("s", "p", "msg_x", 40)
    assert claude_usage(record) == MessageUsage("msg_x", SONNET, 7, 40, 300, 2000, 0, AGENT)
    # Progress of other kinds (hooks, bash output) and a user message inside one are not.
    record["data"]["message"]["type"] = "user"
    assert claude_usage(record) is None
    assert claude_usage({"type": "progress", "data": {"type": "hook_progress"}}) is None
    assert claude_usage({"type": "progress", "data": {"message": "x"}}) is None


def test_usage_only_in_progress_records_is_counted_once(tmp_path: Path) -> None:
    sid, _ = session_with_progress(tmp_path, subagent_file=False)
    _refresh(tmp_path)
    session = Session.objects.get(session_id=sid, is_subagent=False)
    # The Task call's message and the subagent's two, each once.
    assert Usage.objects.filter(session=session).count() == 3
    (day,) = usage_by_day()
    assert day.total.output == 10 + 40 + 60 and day.total.messages == 3
    assert session_usage(session)[0].output == 110


def test_progress_and_the_subagent_file_count_each_message_once(tmp_path: Path) -> None:
    sid, _ = session_with_progress(tmp_path, subagent_file=True)
    _refresh(tmp_path)
    (day,) = usage_by_day()
    assert day.total.output == 10 + 40 + 60 and day.total.messages == 3
    session = Session.objects.get(session_id=sid, is_subagent=False)
    total, per_model = session_usage(session)
    assert total.output == 110 and total.messages == 3
    assert per_model[SONNET].messages == 3


def _csv_rows(client: Client, sid: str) -> list[dict[str, str]]:
    response = client.get(f"/sessions/{sid}/usage.csv")
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_session_csv_says_where_each_message_belongs(tmp_path: Path, client: Client) -> None:
    sid, _ = session_with_progress(tmp_path, subagent_file=True)
    _refresh(tmp_path)
    rows = _csv_rows(client, sid)
    places = {(row["part"], row["turn"]): int(row["output_tokens"]) for row in rows}
    assert places == {("active branch", "1"): 10, (f"subagent {AGENT}", ""): 100}
    session = Session.objects.get(session_id=sid, is_subagent=False)
    total, _ = session_usage(session)
    assert sum(int(r["messages"]) for r in rows) == total.messages == 3
