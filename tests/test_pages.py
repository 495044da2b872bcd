"""The pages render what the import found, escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db


def test_project_list_shows_projects_and_sessions(client, corpus_roots: list[Path]) -> None:
    sessions_import(roots=corpus_roots)
    response = client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "/home/dev/code/webapp" in body
    assert "subtract feature" in body
    assert "Qwen Code" in body
    assert "agent-a0751b2961eeab05e" not in body


def test_project_list_escapes_transcript_text(client, tmp_path: Path) -> None:
    folder = tmp_path / "-w"
    folder.mkdir()
    line = (
        '{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s",'
        '"message":{"role":"user","content":"<script>alert(1)</script>"}}\n'
    )
    (folder / "0b5e7f8a-1c2d-4e3f-8a9b-0c1d2e3f4a5b.jsonl").write_text(line)
    sessions_import(roots=[tmp_path])
    body = client.get("/").content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_empty_dashboard_says_how_to_import(client) -> None:
    body = client.get("/").content.decode()
    assert "BRANCHBOARD_ROOTS" in body
