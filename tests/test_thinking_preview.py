"""A collapsed "Thinking" row shows the first words of its thinking, so a reader can tell
which one to open without opening each."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.services.importing import sessions_import

from .factories import assistant_record, user_record, write_session

pytestmark = pytest.mark.django_db

THOUGHT = (
    "**Planning the refactor**\n\nThe user wants `parse_line` split in two; first I look "
    "at every caller, then at the tests that pin its behaviour, and only then write code."
)


def test_a_collapsed_thinking_row_shows_its_first_words(tmp_path: Path, client: Client) -> None:
    sid = str(uuid.uuid4())
    prompt = user_record("split parse_line <please>", sid=sid)
    blocks = [
        {"type": "thinking", "thinking": THOUGHT, "signature": "x"},
        {"type": "thinking", "thinking": "", "signature": "y"},  # redacted: nothing to show
        {"type": "text", "text": "Done."},
    ]
    reply = assistant_record(blocks, sid=sid, parent=prompt["uuid"])
    write_session(tmp_path / "-work-demo", [prompt, reply])
    sessions_import(roots=[tmp_path])

    page = client.get(f"/sessions/{sid}/").content.decode()

    summaries = re.findall(r'<details class="thinking"[^>]*><summary>(.*?)</summary>', page, re.S)
    assert summaries, page
    shown = re.sub(r"<[^>]+>", "", summaries[0])
    assert (
        shown.startswith("Thinking") and "Planning the refactor The user wants parse_line" in shown
    )
    assert "**" not in shown and "`" not in shown and len(shown) < 140
    assert "only then write code" not in shown  # the first words only
