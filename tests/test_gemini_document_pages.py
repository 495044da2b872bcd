"""A Gemini CLI session of an older release's one-document `session-*.json` on the pages:
downloaded under its own suffix, and no resume command where its folder is unknown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.resume import resume_command
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db

DOCUMENTS = Path(__file__).parent / "fixtures" / "gemini_documents"
TOOL_ID = "c8b2cbd9-7d1e-4f0a-8b6c-5e4d3c2b1a09"  # toolproj: its .project_root names it
OLD_ID = "38d857b1-4c2a-4e1f-9b3d-2a1c0e9f8d7b"  # a hashed folder: its project is unknown


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / ".gemini"
    shutil.copytree(DOCUMENTS, home)
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors, report.errors
    return home


def test_a_document_downloads_as_json_byte_for_byte(home: Path, client: Client) -> None:
    response = client.get(f"/sessions/{OLD_ID}/export.jsonl")
    assert response.status_code == 200
    assert 'filename="38d857b1-4c2a-4e1f-9b3d-2a1c0e9f8d7b.json"' in response["Content-Disposition"]
    raw = b"".join(response.streaming_content)
    assert raw == next((home / "tmp").rglob("session-*38d857b1.json")).read_bytes()
    json.loads(raw)  # one JSON document, as the name says


def test_no_resume_command_where_the_project_folder_is_unknown(home: Path, client: Client) -> None:
    session = Session.objects.get(session_id=OLD_ID)
    assert session.cwd == ""
    assert resume_command(session) == ""
    page = client.get(f"/sessions/{OLD_ID}/").content.decode()
    assert 'id="resume-command"' not in page and "gemini --resume" not in page
    assert "the folder this session ran in is not known" in page
    # Where the folder is known, the command goes there first.
    known = Session.objects.get(session_id=TOOL_ID)
    assert resume_command(known).startswith("cd ") and known.cwd in resume_command(known)
