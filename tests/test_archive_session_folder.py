"""The archive keeps every file of the folder a session owns, and a restore brings each back
byte for byte or names it (issue: "Restore leaves files out and says it restored everything").

A Claude Code session owns `<project>/<session id>/`: `subagents/agent-<id>.jsonl` with its
`agent-<id>.meta.json`, `custom-title.json`, `tool-results/<call>.txt`. The files come from
the corpus (the real CLI wrote the session, its subagent and the `.meta.json`; `custom-title
.json` is the one the CLI's `/branch` wrote).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command

from sessions_app.models import ArchivePiece, Session
from sessions_app.models.archive import ArchivedFile
from sessions_app.services import archive
from sessions_app.services.archive import sidecars
from sessions_app.services.archive.restoring import session_restore
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures" / "cli" / "claude"
PROJECT = "-home-dev-code-agents"
SID = "04fa9149-8141-4f34-8bc2-f6d11b8fa354"
SUBAGENT = "subagents/agent-a0751b2961eeab05e.jsonl"
META = "subagents/agent-a0751b2961eeab05e.meta.json"
TITLE = "custom-title.json"
TOOL_RESULT = "tool-results/toolu_01Hk3vBQ.txt"
GEMINI_SID = "3c4d5e6f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
# A tool's saved output: any bytes, no final newline, not JSON.
TOOL_BYTES = b"line one\n\x00\xff binary \xe2\x82\xac tail without newline"


@pytest.fixture
def root(tmp_path: Path, settings) -> Path:
    root = tmp_path / "claude" / "projects"
    # A restore writes only under a configured root.
    settings.SESSION_ROOTS = [root]
    shutil.copytree(FIXTURES / PROJECT, root / PROJECT)
    folder = root / PROJECT / SID
    shutil.copyfile(
        FIXTURES / "-home-dev-code-forks" / "ff61fa45-6bd0-4f30-be46-c8dcac5a359b" / TITLE,
        folder / TITLE,
    )
    (folder / "tool-results").mkdir()
    (folder / TOOL_RESULT).write_bytes(TOOL_BYTES)
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    return root


def _files(root: Path) -> dict[str, bytes]:
    """Every file under the project folder, by its path in it."""
    project = root / PROJECT
    return {
        str(p.relative_to(project)): p.read_bytes()
        for p in sorted(project.rglob("*"))
        if p.is_file()
    }


def _delete(root: Path) -> None:
    """The session's file and its folder deleted, as the CLI's cleanup does; imported again."""
    (root / PROJECT / f"{SID}.jsonl").unlink()
    shutil.rmtree(root / PROJECT / SID)
    assert sessions_import(roots=[root]).removed == 2  # the session and its subagent


def _restore_by_command() -> dict:
    out = io.StringIO()
    call_command("restore_session", SID, "--json", stdout=out)
    return orjson.loads(out.getvalue())


def test_every_file_of_the_folder_is_archived_whole_except_the_subagent_transcript(
    root: Path,
) -> None:
    session = Session.objects.get(session_id=SID, is_subagent=False)
    folder = root / PROJECT / SID
    rows = {r.name: r for r in ArchivedFile.objects.filter(session=session, kind="sidecar")}
    # The subagent's transcript is a session of its own, archived as one; the rest as files.
    assert set(rows) == {META, TITLE, TOOL_RESULT}
    for name, row in rows.items():
        assert row.not_kept is None
        assert archive.files.archived_file_bytes(row) == (folder / name).read_bytes()


def test_restore_by_the_command_brings_every_file_back_byte_for_byte(root: Path) -> None:
    before = _files(root)
    assert {f"{SID}/{n}" for n in (SUBAGENT, META, TITLE, TOOL_RESULT)} <= set(before)
    _delete(root)

    info = _restore_by_command()

    assert _files(root) == before
    folder = root / PROJECT / SID
    assert sorted(info["restored"]) == sorted(
        [str(root / PROJECT / f"{SID}.jsonl")]
        + [str(folder / n) for n in (SUBAGENT, META, TITLE, TOOL_RESULT)]
    )
    assert info["not_restored"] == []


def test_restore_by_the_page_brings_every_file_back_byte_for_byte(client, root: Path) -> None:
    before = _files(root)
    _delete(root)

    page = client.post(f"/sessions/{SID}/restore/", follow=True)

    assert page.status_code == 200
    text = page.content.decode()
    assert "and 4 more of its files" in text and "Not restored" not in text
    assert _files(root) == before


def test_a_file_whose_archive_copy_is_missing_or_damaged_is_named(root: Path) -> None:
    before = _files(root)
    session = Session.objects.get(session_id=SID, is_subagent=False)
    subagent = Session.objects.get(owner_session_id=SID, is_subagent=True)
    _delete(root)
    # The subagent's pieces are gone, and the title's copy no longer matches its digest.
    ArchivePiece.objects.filter(session=subagent).delete()
    ArchivedFile.objects.filter(session=session, name=TITLE).update(
        data=archive.zstd.compress(b'{"customTitle":"not this"}')
    )

    info = _restore_by_command()

    folder = root / PROJECT / SID
    named = "\n".join(info["not_restored"])
    assert len(info["not_restored"]) == 2, named
    assert f"{folder / SUBAGENT}: not restored" in named
    assert f"{folder / TITLE}: not restored" in named and "corrupted" in named
    after = _files(root)
    assert f"{SID}/{SUBAGENT}" not in after and f"{SID}/{TITLE}" not in after
    # Everything else came back as it was.
    assert after == {
        k: v for k, v in before.items() if k not in {f"{SID}/{SUBAGENT}", f"{SID}/{TITLE}"}
    }


def test_a_file_too_large_to_keep_is_named_at_import_and_at_restore(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sidecars, "SIDECAR_LIMIT", 64)
    big = root / PROJECT / SID / "tool-results" / "toolu_big.txt"
    big.write_bytes(b"x" * 65)
    with open(root / PROJECT / f"{SID}.jsonl", "ab") as f:  # the session goes on
        f.write(b'{"type":"last-prompt","lastPrompt":"more","sessionId":"' + SID.encode() + b'"}\n')
    report = sessions_import(roots=[root])
    assert [e for e in report.errors if "toolu_big.txt" in e and "over the limit" in e]
    _delete(root)

    info = _restore_by_command()

    assert info["not_restored"] == [
        f"{big}: not in the archive (65 bytes, over the limit of 64); not restored"
    ]
    assert not big.exists() and (root / PROJECT / SID / TOOL_RESULT).read_bytes() == TOOL_BYTES


def test_a_file_that_changed_is_kept_again_and_restored_as_it_was_last(root: Path) -> None:
    title = root / PROJECT / SID / TITLE
    title.write_bytes(b'{"customTitle":"renamed later"}')
    with open(root / PROJECT / f"{SID}.jsonl", "ab") as f:  # the CLI's own title record too
        f.write(
            orjson.dumps({"type": "custom-title", "customTitle": "renamed later", "sessionId": SID})
            + b"\n"
        )
    assert not sessions_import(roots=[root]).errors
    before = _files(root)
    _delete(root)

    assert _restore_by_command()["not_restored"] == []

    assert title.read_bytes() == b'{"customTitle":"renamed later"}' and _files(root) == before


def test_a_session_imported_before_its_folder_was_kept_is_caught_up(root: Path) -> None:
    """A session the archive knew before it kept folders: the next pass keeps them, though
    the session's file did not change."""
    session = Session.objects.get(session_id=SID, is_subagent=False)
    ArchivedFile.objects.filter(session=session, kind="sidecar").delete()

    report = sessions_import(roots=[root])

    assert not report.errors, report.errors
    kept = set(
        ArchivedFile.objects.filter(session=session, kind="sidecar").values_list("name", flat=True)
    )
    assert kept == {META, TITLE, TOOL_RESULT}


def test_a_file_there_with_other_bytes_is_left_alone_and_named(root: Path) -> None:
    session = Session.objects.get(session_id=SID, is_subagent=False)
    _delete(root)
    title = root / PROJECT / SID / TITLE
    title.parent.mkdir(mode=0o700)
    title.write_bytes(b'{"customTitle":"another"}')

    written = session_restore(session=session)

    assert title.read_bytes() == b'{"customTitle":"another"}'
    assert written.problems == [f"{title}: another file is there; left alone (never overwritten)"]


def test_a_gemini_session_comes_back_with_its_sub_agent_chat(tmp_path: Path, settings) -> None:
    """Gemini CLI's folder beside a chat holds its sub-agents' chats: back with it."""
    home = tmp_path / ".gemini"
    shutil.copytree(Path(__file__).parent / "fixtures" / "gemini_read", home)
    settings.SESSION_ROOTS = [home / "tmp"]
    chats = home / "tmp" / "resumed" / "chats"
    chat = chats / "session-2026-12-01T10-00-3c4d5e6f.jsonl"
    sub_chat = chats / GEMINI_SID / "7a8b9c0d-2e3f-4a5b-9c6d-7e8f9a0b1c2d.jsonl"
    assert not sessions_import(roots=[home / "tmp"]).errors
    before = {chat: chat.read_bytes(), sub_chat: sub_chat.read_bytes()}
    chat.unlink()
    shutil.rmtree(chats / GEMINI_SID)
    assert sessions_import(roots=[home / "tmp"]).removed == 2

    out = io.StringIO()
    call_command("restore_session", GEMINI_SID, "--json", stdout=out)

    info = orjson.loads(out.getvalue())
    assert sorted(info["restored"]) == sorted(map(str, before)) and info["not_restored"] == []
    assert {p: p.read_bytes() for p in before} == before


def test_a_link_in_the_folder_is_not_followed_when_kept_nor_when_restored(
    root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"not the session's\n")
    folder = root / PROJECT / SID
    (folder / "tool-results" / "link.txt").symlink_to(outside / "secret.txt")
    with open(root / PROJECT / f"{SID}.jsonl", "ab") as f:
        f.write(b'{"type":"last-prompt","lastPrompt":"more","sessionId":"' + SID.encode() + b'"}\n')
    report = sessions_import(roots=[root])
    assert [e for e in report.errors if "link.txt: not archived (a link)" in e]
    session = Session.objects.get(session_id=SID, is_subagent=False)
    assert not session.archived_files.filter(name="tool-results/link.txt").exists()
    _delete(root)
    # The session's folder is a link to elsewhere by the time it is restored.
    folder.symlink_to(outside, target_is_directory=True)

    info = _restore_by_command()

    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing written there
    named = "\n".join(info["not_restored"])
    for name in (SUBAGENT, META, TITLE, TOOL_RESULT):
        assert f"{folder / name}: not restored" in named, named
    assert "links are never followed" in named
