"""Terminal escapes in tool output are stripped wherever it is shown as text: on the
transcript page, in search snippets and in the Markdown export alike."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .factories import assistant_record, tool_result, user_record, write_session

pytestmark = pytest.mark.django_db

OUTPUT = "\x1b[1;31mERROR\x1b[0m: florbnik failed \x1b]0;title\x07at \x1b[32mstep 3\x1b[0m"
ESCAPE = re.compile(r"\x1b|\\u001b|&#27;|\[(?:1;31|0|32)m")


@pytest.fixture
def sid(tmp_path: Path) -> str:
    sid = str(uuid.uuid4())
    prompt = user_record("run the build", sid=sid)
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}
    used = assistant_record([call], sid=sid, parent=prompt["uuid"])
    out = user_record(tool_result("t1", OUTPUT), sid=sid, parent=used["uuid"])
    reply = assistant_record("it failed", sid=sid, parent=out["uuid"])
    write_session(tmp_path / "-work-demo", [prompt, used, out, reply])
    sessions_import(roots=[tmp_path])
    assert not search_refresh().errors
    return sid


def test_the_transcript_shows_the_output_without_escapes(client: Client, sid: str) -> None:
    page = client.get(f"/sessions/{sid}/").content.decode()
    assert "ERROR: florbnik failed at step 3" in page and not ESCAPE.search(page)


def test_a_search_snippet_shows_the_output_without_escapes(client: Client, sid: str) -> None:
    page = client.get("/search/", {"q": "florbnik"}).content.decode()
    hit = re.search(r'<span class="snippet">(.*?)</span>', page, re.S)
    assert hit, page
    assert re.sub(r"</?mark>", "", hit.group(1)) == "ERROR: florbnik failed at step 3"
    assert not ESCAPE.search(hit.group(1))


def test_the_markdown_export_shows_the_output_without_escapes(client: Client, sid: str) -> None:
    response = client.get(f"/sessions/{sid}/export.md")
    markdown = b"".join(response.streaming_content).decode()
    assert "ERROR: florbnik failed at step 3" in markdown and not ESCAPE.search(markdown)
