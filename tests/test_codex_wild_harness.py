"""The wild-rollout check's own reading (tests/compat/codex_wild_check.py, issue 42): a prompt
longer than the index keeps is a prompt, not context, so the prompts the real codex sends
are all counted (019a58d2 at turn 39 and 019eb0ee at turn 10 looked one prompt short)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from sessions_app.formats.common import TEXT_LIMIT
from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from tests.compat.test_codex_wild_compat import context_texts, sent_prompts

pytestmark = pytest.mark.django_db(transaction=True)

SID = "019eb0ee-0000-7000-8000-000000000007"
ENV = "<environment_context>\n  <cwd>/home/dev/robot</cwd>\n</environment_context>"
LONG = "unitree@nx:~$ roslaunch slam_planner\n" + "log line of the robot\n" * 200 + "fix it."


def _line(kind: str, payload: dict) -> bytes:
    return orjson.dumps({"timestamp": "2026-06-10T09:47:59.000Z", "type": kind, "payload": payload})


def _user(text: str) -> bytes:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return _line("response_item", item)


def test_a_prompt_longer_than_the_index_keeps_is_no_context(tmp_path: Path, settings) -> None:
    assert len(LONG) > TEXT_LIMIT
    root = tmp_path / "sessions"
    path = (
        root / "2026/06/10/rollout-2026-06-10T18-47-59-019eb0ee-0000-7000-8000-000000000007.jsonl"
    )
    path.parent.mkdir(parents=True)
    meta = {"id": SID, "timestamp": "2026-06-10T09:47:59.000Z", "cwd": "/home/dev/robot"}
    lines = [_line("session_meta", meta), _user(ENV)]
    for text in ("hello", LONG):
        lines += [_user(text), _line("event_msg", {"type": "user_message", "message": text})]
    path.write_bytes(b"\n".join(lines) + b"\n")
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    session = Session.objects.get(session_id=SID)
    prompts = list(session.records.turn_starts().order_by("line").values_list("text", flat=True))
    assert len(prompts) == 2 and prompts[1] == LONG[:TEXT_LIMIT]

    context = context_texts(path, prompts)

    assert context == {ENV}
    # What the real codex sends on resume: the environment context and both prompts, whole.
    body = {
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}
            for t in (ENV, "hello", LONG)
        ]
    }
    assert sent_prompts(body, context) == ["hello", LONG]
