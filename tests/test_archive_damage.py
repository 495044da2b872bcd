"""A removed session whose archived copy is damaged: the page, the exports and the API say so."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache

from sessions_app.models import ArchivePiece, Session
from sessions_app.services import archive
from sessions_app.services.archive import ArchiveCorrupt, session_open
from sessions_app.services.archive.health import archive_damage
from sessions_app.services.importing import sessions_import

from .test_api import api
from .test_archive import SID, _one_session

pytestmark = pytest.mark.django_db

WORDS = "damaged from byte 1000"


@pytest.fixture(autouse=True)
def _fresh_verdicts() -> None:
    # Verdicts are cached per session row; a row id may come back in the next test.
    cache.clear()


def _removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Session, bytes]:
    """A session in pieces of 1000 bytes whose file is gone: served from the archive."""
    monkeypatch.setattr(archive, "PIECE_BYTES", 1000)
    path = _one_session(tmp_path, turns=12)
    sessions_import(roots=[tmp_path / "projects"])
    raw = path.read_bytes()
    path.unlink()
    session = Session.objects.get()
    assert session.archive_pieces.count() >= 3
    return session, raw


def _corrupt_second_piece(session: Session, raw: bytes) -> None:
    piece = session.archive_pieces.get(start=1000)
    other = raw[1000 : 1000 + piece.length].replace(b"prompt", b"PROMPT")
    ArchivePiece.objects.filter(pk=piece.pk).update(data=archive.zstd.compress(other))


def test_a_sound_archive_shows_no_notice(client, tmp_path: Path, monkeypatch, token: str) -> None:
    session, _ = _removed(tmp_path, monkeypatch)
    assert archive_damage(session) is None
    page = client.get(f"/sessions/{SID}/").content.decode()
    assert "prompt 0" in page and 'id="archive-damage"' not in page
    assert "damaged" not in client.get(f"/sessions/{SID}/export.md").getvalue().decode()
    assert api(client, "get", f"/api/sessions/{SID}", token).json()["archive_damage"] is None


def test_the_page_says_the_archive_copy_is_damaged(client, tmp_path: Path, monkeypatch) -> None:
    session, raw = _removed(tmp_path, monkeypatch)
    _corrupt_second_piece(session, raw)
    page = client.get(f"/sessions/{SID}/").content.decode()
    assert 'id="archive-damage"' in page
    assert WORDS in page and "comes from the index" in page and "cannot be restored" in page


def test_the_exports_carry_the_notice_at_their_top(client, tmp_path: Path, monkeypatch) -> None:
    session, raw = _removed(tmp_path, monkeypatch)
    _corrupt_second_piece(session, raw)
    md = client.get(f"/sessions/{SID}/export.md").getvalue().decode()
    assert WORDS in md and md.index(WORDS) < md.index("## Turn 1")
    html = client.get(f"/sessions/{SID}/export.html").getvalue().decode()
    assert WORDS in html and html.index("<main>") < html.index(WORDS) < html.index("<article")


def test_the_api_answer_names_the_damage(client, tmp_path: Path, monkeypatch, token: str) -> None:
    session, raw = _removed(tmp_path, monkeypatch)
    _corrupt_second_piece(session, raw)
    got = api(client, "get", f"/api/sessions/{SID}", token).json()
    assert got["archive_damage"]["from_byte"] == 1000
    assert got["archive_damage"]["missing"] is False
    assert WORDS in got["archive_damage"]["message"]
    spec = client.get("/api/openapi.json").json()["components"]["schemas"]["Session"]
    assert "archive_damage" in spec["required"]
    assert set(spec["properties"]["archive_damage"]["properties"]) == set(got["archive_damage"])


def test_a_missing_piece_is_damage_from_its_first_byte(tmp_path: Path, monkeypatch) -> None:
    session, _ = _removed(tmp_path, monkeypatch)
    session.archive_pieces.filter(start=1000).delete()
    damage = archive_damage(session)
    assert damage is not None and damage.start == 1000 and damage.missing
    assert "damaged from byte 1000" in damage.message


def test_a_file_still_there_is_never_called_damaged(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(archive, "PIECE_BYTES", 1000)
    path = _one_session(tmp_path, turns=12)
    sessions_import(roots=[tmp_path / "projects"])
    session = Session.objects.get()
    _corrupt_second_piece(session, path.read_bytes())
    assert archive_damage(session) is None  # the file is served, not the archive


def test_the_verdict_is_cached_and_a_failed_read_sets_it(tmp_path: Path, monkeypatch) -> None:
    session, _ = _removed(tmp_path, monkeypatch)
    checks = []
    real = archive.zstd.decompress
    monkeypatch.setattr(archive.zstd, "decompress", lambda b: checks.append(1) or real(b))
    assert archive_damage(session) is None
    first = len(checks)
    assert first == session.archive_pieces.count()  # one pass: each piece once
    assert archive_damage(session) is None and len(checks) == first  # cached: none again
    # Bytes rewritten at the same stored size keep the listing: a read that fails says so.
    piece = session.archive_pieces.get(start=2000)
    data = bytes(piece.data)
    ArchivePiece.objects.filter(pk=piece.pk).update(data=data[:-1] + bytes([data[-1] ^ 1]))
    assert archive_damage(session) is None  # not read yet: the cached verdict stands
    with pytest.raises(ArchiveCorrupt), session_open(session) as f:
        f.seek(2000)
        f.read(10)
    damage = archive_damage(session)
    assert damage is not None and damage.start == 2000 and not damage.missing
