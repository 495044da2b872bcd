"""Two projects with the same label (one working folder, two CLI folders) are told apart.

The home page's rows, the usage page's rows and the per-project CSV each name the
agent and the folder of a project whose label another project shares.
"""

from __future__ import annotations

import csv
import io
import os
import re
import uuid
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

from .factories import jsonl, user_record
from .test_usage import streamed

pytestmark = pytest.mark.django_db
CWD = "/Users/dain/workspace/claude-code-log"
FOLDERS = ("-Users-dain-workspace-claude-code-log", "-Users-dain-workspace-claude-code-log-sample")


def _twins(root: Path) -> None:
    for folder in FOLDERS:
        sid = str(uuid.uuid4())
        user = user_record("hello", sid=sid, cwd=CWD, timestamp="2026-03-01T09:59:00.000Z")
        (root / folder).mkdir(parents=True)
        path = root / folder / f"{sid}.jsonl"
        path.write_bytes(jsonl([user, *streamed(sid, user["uuid"], f"msg_{sid[:8]}", [5])]))
        old = path.stat().st_mtime - 120
        os.utime(path, (old, old))
    sessions_import(roots=[root])
    assert not usage_refresh().errors


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_the_home_page_tells_two_projects_of_one_label_apart(
    tmp_path: Path, client: Client
) -> None:
    _twins(tmp_path)
    page = client.get("/").content.decode()
    rows = re.findall(r'<a class="card project-row[^"]*"[^>]*>(.*?)</a>', page, re.S)
    assert len(rows) == 2
    texts = [_text(row) for row in rows]
    assert texts[0] != texts[1]
    for folder in FOLDERS:
        assert sum(text.endswith(folder) or f"{folder} " in text for text in texts) == 1


def test_the_usage_page_and_the_project_csv_tell_them_apart(tmp_path: Path, client: Client) -> None:
    _twins(tmp_path)
    page = client.get("/usage/").content.decode()
    table = page[page.index('id="usage-projects"') :]
    rows = [_text(r) for r in re.findall(r"<tr><td>(.*?)</tr>", table, re.S)]
    assert len(rows) == 2 and rows[0] != rows[1]
    response = client.get("/usage.csv", {"by": "project"})
    lines = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {(r["project"], r["agent"], r["folder"]) for r in lines} == {
        (CWD, "claude", str(tmp_path / folder)) for folder in FOLDERS
    }
