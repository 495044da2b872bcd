"""Every byte version of a Gemini CLI file rewritten in place stays in the archive (issue 45).

An older release rewrote its one-document `session-*.json` after every message, and 0.61
rewrites one whole (a plain `writeFile`, so it can be read half-written) when it writes a
summary into it. The import reads such a file again from its start; the bytes it held
before are kept as an earlier version, downloadable from the session's page.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.models.archive import ArchivedFile
from sessions_app.services.archive import archive_bytes, digest
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTS = Path(__file__).parent / "fixtures" / "gemini_documents"
TOOL_DOC = "tmp/toolproj/chats/session-2026-04-24T23-16-c8b2cbd9.json"
TOOL_ID = "c8b2cbd9-7d1e-4f0a-8b6c-5e4d3c2b1a09"
EARLIER = ArchivedFile.Kind.EARLIER_VERSION


def _imported(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / ".gemini"
    shutil.copytree(DOCUMENTS, home)
    _import(home)
    return home, home / TOOL_DOC


def _import(home: Path) -> None:
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors, report.errors


def _with_summary(document: bytes) -> bytes:
    """The document as 0.61's summary writer leaves it: the same conversation, a summary
    and a memory scratchpad added, written again whole (`JSON.stringify(.., null, 2)`)."""
    data = json.loads(document)
    data.update(summary="Listing and creating files", memoryScratchpad={"notes": ["ls"]})
    return json.dumps(data, indent=2, ensure_ascii=False).encode()


def _versions(session: Session) -> list[bytes]:
    from sessions_app.services.archive.files import archived_file_bytes

    rows = ArchivedFile.objects.filter(session=session, kind=EARLIER).order_by("pk")
    return [archived_file_bytes(row) for row in rows]


def test_a_document_rewritten_in_place_keeps_its_earlier_bytes(tmp_path: Path, client) -> None:
    home, document = _imported(tmp_path)
    original = document.read_bytes()
    rewritten = _with_summary(original)
    document.write_bytes(rewritten)

    _import(home)

    session = Session.objects.get(session_id=TOOL_ID)
    assert session.title == "Listing and creating files" and session.turn_count == 2
    assert archive_bytes(session) == rewritten  # the archive follows the file
    assert _versions(session) == [original]  # and keeps what it held before
    html = client.get(f"/sessions/{TOOL_ID}/").content.decode()
    assert "Earlier versions of the file, kept here" in html
    answer = client.get(f"/sessions/{TOOL_ID}/versions/{digest(original)}/")
    assert answer.status_code == 200 and answer.content == original
    assert f"{document.stem}.{digest(original)[:12]}.json" in answer["Content-Disposition"]
    assert client.get(f"/sessions/{TOOL_ID}/versions/{'0' * 64}/").status_code == 404


def test_a_half_written_rewrite_loses_nothing_and_each_version_is_kept_once(
    tmp_path: Path,
) -> None:
    home, document = _imported(tmp_path)
    original = document.read_bytes()
    rewritten = _with_summary(original)

    document.write_bytes(rewritten[: len(rewritten) // 2])  # read while the CLI writes it
    sessions_import(roots=[home / "tmp"])
    session = Session.objects.get(session_id=TOOL_ID)
    assert _versions(session) == [original]
    document.write_bytes(rewritten)  # the write ends: the half was its first bytes
    _import(home)
    assert _versions(session) == [original]
    assert Session.objects.get(pk=session.pk).turn_count == 2
    # Back to a version already kept, then on again: each version is stored once.
    document.write_bytes(original)
    _import(home)
    document.write_bytes(rewritten)
    _import(home)
    assert sorted(_versions(session)) == sorted([original, rewritten])

    # The CLI deletes the file (retention): every version is still here.
    document.unlink()
    _import(home)
    session = Session.objects.get(pk=session.pk)
    assert session.file_removed_at is not None and archive_bytes(session) == rewritten
    assert len(_versions(session)) == 2


def test_a_file_of_a_cli_that_only_appends_keeps_no_versions(tmp_path: Path) -> None:
    source = Path(__file__).parent / "fixtures" / "cli" / "claude" / "-home-dev-code-forks"
    folder = tmp_path / ".claude" / "projects" / source.name
    shutil.copytree(source, folder)
    sessions_import(roots=[folder.parent])
    path = sorted(folder.glob("*.jsonl"))[0]
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # rewritten shorter: read again from the start

    sessions_import(roots=[folder.parent])

    assert not ArchivedFile.objects.filter(kind=EARLIER).exists()
