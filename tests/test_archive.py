"""The archive: a compressed copy of every session file imported, read back byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessions_app.models import ArchivePiece, Session
from sessions_app.models.archive import ArchivedFile
from sessions_app.services import archive
from sessions_app.services.archive import (
    ArchiveCorrupt,
    archive_bytes,
    archive_check,
    archived_end,
    session_open,
)
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, jsonl, user_record

pytestmark = pytest.mark.django_db


def _one_session(folder: Path, turns: int = 2) -> Path:
    project = folder / "projects" / "-tmp-p"
    project.mkdir(parents=True)
    path = project / f"{SID}.jsonl"
    path.write_bytes(_turns(turns))
    return path


SID = "11111111-1111-4111-8111-111111111111"


def _turns(turns: int, start: int = 0, parent: str | None = None) -> bytes:
    records = []
    for k in range(start, start + turns):
        u = user_record(f"prompt {k}", sid=SID, uuid_=f"u{k}", parent=parent)
        a = assistant_record(f"answer {k}", sid=SID, uuid_=f"a{k}", parent=u["uuid"])
        records += [u, a]
        parent = a["uuid"]
    return jsonl(records)


def test_every_corpus_file_reads_back_exactly(corpus: Path, corpus_roots: list[Path]) -> None:
    report = sessions_import(roots=corpus_roots)
    sessions = list(Session.objects.all())
    # The session files, and the files their folders hold besides (`custom-title.json`, a
    # subagent's `.meta.json`), each read whole.
    folders = ArchivedFile.objects.filter(kind=ArchivedFile.Kind.SIDECAR)
    assert folders.exists()
    kept = sum(folders.values_list("length", flat=True))
    assert sessions and report.archived == sum(s.bytes_imported for s in sessions) + kept
    for session in sessions:
        whole = Path(session.path).read_bytes()
        assert archive_bytes(session) == whole[: session.bytes_imported], session.path
        archive_check(session)


def test_an_appended_file_adds_only_its_new_bytes(tmp_path: Path) -> None:
    path = _one_session(tmp_path)
    sessions_import(roots=[tmp_path / "projects"])
    session = Session.objects.get()
    first = list(session.archive_pieces.values_list("start", "length"))
    with path.open("ab") as f:
        f.write(_turns(1, start=5, parent="a1"))
    report = sessions_import(roots=[tmp_path / "projects"])
    session.refresh_from_db()
    pieces = list(session.archive_pieces.order_by("start").values_list("start", "length"))
    assert pieces[: len(first)] == first and len(pieces) == len(first) + 1
    assert report.archived == pieces[-1][1] == path.stat().st_size - first[-1][1]
    assert archive_bytes(session) == path.read_bytes()


def test_a_rewritten_file_is_stored_again_and_its_old_pieces_go(tmp_path: Path) -> None:
    path = _one_session(tmp_path, turns=3)
    sessions_import(roots=[tmp_path / "projects"])
    old = set(ArchivePiece.objects.values_list("pk", flat=True))
    path.write_bytes(_turns(1))  # shorter: read again from the start
    sessions_import(roots=[tmp_path / "projects"])
    session = Session.objects.get()
    assert not old & set(session.archive_pieces.values_list("pk", flat=True))
    assert archive_bytes(session) == path.read_bytes()


def test_a_big_file_is_kept_in_pieces_read_by_offset(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(archive, "PIECE_BYTES", 1000)
    path = _one_session(tmp_path, turns=40)
    sessions_import(roots=[tmp_path / "projects"])
    session = Session.objects.get()
    assert session.archive_pieces.count() == -(-path.stat().st_size // 1000)
    raw = path.read_bytes()
    path.unlink()
    with session_open(session) as f:
        for record in session.records.order_by("-line"):  # backwards: every piece again
            f.seek(record.offset)
            assert f.read(record.length) == raw[record.offset : record.offset + record.length]


def test_a_corrupted_piece_is_detected_and_never_served(tmp_path: Path) -> None:
    path = _one_session(tmp_path)
    sessions_import(roots=[tmp_path / "projects"])
    session = Session.objects.get()
    piece = session.archive_pieces.get()
    other = archive.zstd.compress(path.read_bytes().replace(b"prompt 0", b"prompt X"))
    ArchivePiece.objects.filter(pk=piece.pk).update(data=other)
    path.unlink()
    with pytest.raises(ArchiveCorrupt, match="corrupted"):
        archive_check(session)
    with pytest.raises(ArchiveCorrupt), session_open(session) as f:
        f.read()
    ArchivePiece.objects.filter(pk=piece.pk).update(data=b"not zstd")
    with pytest.raises(ArchiveCorrupt):
        archive_bytes(session)


def test_archive_off_stores_nothing(tmp_path: Path, settings) -> None:
    settings.ARCHIVE = False
    _one_session(tmp_path)
    report = sessions_import(roots=[tmp_path / "projects"])
    assert report.archived == 0 and not ArchivePiece.objects.exists()


def test_a_session_imported_with_the_archive_off_is_archived_once_on(
    tmp_path: Path, settings
) -> None:
    settings.ARCHIVE = False
    path = _one_session(tmp_path)
    sessions_import(roots=[tmp_path / "projects"])
    settings.ARCHIVE = True
    report = sessions_import(roots=[tmp_path / "projects"])
    session = Session.objects.get()
    assert report.skipped == 1 and report.sessions == 0  # not imported again
    assert archived_end(session) == session.bytes_imported == path.stat().st_size
    assert archive_bytes(session) == path.read_bytes()


def test_an_archive_failure_is_reported_and_the_import_goes_on(tmp_path: Path, monkeypatch) -> None:
    def broken(**kwargs: object) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr("sessions_app.services.importing.archiving.archive_extend", broken)
    _one_session(tmp_path)
    report = sessions_import(roots=[tmp_path / "projects"])
    assert Session.objects.get().record_count == 4
    assert any("not archived" in e and "disk full" in e for e in report.errors)


def test_a_removed_file_is_marked_and_read_from_the_archive(tmp_path: Path) -> None:
    path = _one_session(tmp_path)
    sessions_import(roots=[tmp_path / "projects"])
    raw = path.read_bytes()
    os.unlink(path)
    report = sessions_import(roots=[tmp_path / "projects"])
    session = Session.objects.get()
    assert report.removed == 1 and session.file_removed_at is not None
    assert session.record_count == 4  # the rows stay
    with session_open(session) as f:
        assert f.read() == raw


def test_the_usage_page_shows_the_archive_size(client, tmp_path: Path) -> None:
    path = _one_session(tmp_path)
    sessions_import(roots=[tmp_path / "projects"])
    text = client.get("/usage/").content.decode()
    assert 'id="archive-size"' in text and "Archive: 1 session file," in text
    stored = ArchivePiece.objects.get().data
    assert (
        path.stat().st_size > 1000
        and f"1.1\xa0KB of transcripts kept in {len(stored)}\xa0bytes" in text
    )


@pytest.mark.parametrize("ahead_limit", [1 << 30, 10])
def test_pieces_made_ahead_hold_exactly_the_bytes_indexed(
    tmp_path: Path, monkeypatch, ahead_limit: int
) -> None:
    """A file read from its start is compressed in a thread as the import reads it
    (`pieces_ahead`, files up to AHEAD_BYTES); a half-written last line is not indexed, so
    the last piece is cut at the end of the last whole line, not where the thread read to."""
    from sessions_app.services.archive import making as archive_making

    monkeypatch.setattr(archive, "PIECE_BYTES", 1000)
    monkeypatch.setattr(archive_making, "AHEAD_BYTES", ahead_limit)
    made: list[int] = []
    real = archive_making._ahead
    monkeypatch.setattr(
        archive_making, "_ahead", lambda fd, size: made.append(size) or real(fd, size)
    )
    path = _one_session(tmp_path, turns=12)
    whole = path.read_bytes()
    with path.open("ab") as f:
        f.write(b'{"type": "user", "half')  # a CLI half-way through its line
    sessions_import(roots=[tmp_path / "projects"])

    session = Session.objects.get()
    assert session.bytes_imported == len(whole)
    assert made == ([path.stat().st_size] if ahead_limit > 10 else [])
    lengths = list(session.archive_pieces.order_by("start").values_list("length", flat=True))
    assert sum(lengths) == len(whole) and lengths[-1] == len(whole) % 1000
    assert archive_bytes(session) == whole
    archive_check(session)
