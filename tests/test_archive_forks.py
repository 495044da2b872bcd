"""A fork's archive: made from its bytes as they are written, exactly its file, title included."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services import archive
from sessions_app.services.archive import archive_bytes, archive_check
from sessions_app.services.archive.restoring import session_restore
from sessions_app.services.branching import deriving, forking, session_fork
from sessions_app.services.importing import sessions_import

from .corpus import ALL_ROOTS
from .facts import TURNS

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _configured_roots(settings, corpus_copy) -> None:
    """A restore writes only under a configured root: the corpus's roots are."""
    settings.SESSION_ROOTS = [corpus_copy.path / r for r in ALL_ROOTS]


CLAUDE = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"


def _never_read_again(*args, **kwargs) -> None:
    raise AssertionError("the fork's file was read again to archive it")


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    # Many pieces, a short one where the kept lines end, and the title line after it.
    monkeypatch.setattr(archive, "PIECE_BYTES", 1000)
    monkeypatch.setattr(deriving, "archive_written", _never_read_again)


@pytest.mark.parametrize("relpath", sorted(r for r, n in TURNS.items() if n >= 2))
def test_a_fork_is_archived_from_its_written_bytes_exactly_as_its_file(
    imported: Path, relpath: str, small_pieces: None
) -> None:
    source = Session.objects.select_related("project").get(path=str(imported / relpath))
    for turn in (None, 1):
        new = session_fork(session=source, turn=turn)
        if not new.records.exists() or new.archive_pieces.count() == 0:
            continue  # indexed by a full import (not derived): archived by the import
        raw = Path(new.path).read_bytes()
        assert new.archive_pieces.count() >= raw.count(b"\n") // 10  # cut in pieces
        archive_check(new)  # every digest is its piece's
        assert archive_bytes(new) == raw
        assert new.bytes_imported == len(raw)


def test_a_retitled_fork_is_archived_with_its_final_title_line(
    imported: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = Session.objects.select_related("project").get(path=str(imported / CLAUDE))
    made: list[Session] = []
    started: list[bool] = []

    class Meanwhile(forking._ReadingBack):
        def __init__(self, *args, **kwargs) -> None:
            # Another branch takes the title while this one's file is read back.
            if not started:
                started.append(True)
                made.append(session_fork(session=source))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(forking, "_ReadingBack", Meanwhile)
    new = session_fork(session=source)
    raw = Path(new.path).read_bytes()
    assert raw.splitlines()[-1].count(b"(Branch 2)") == 1
    assert archive_bytes(new) == raw
    assert archive_bytes(made[0]) == Path(made[0].path).read_bytes()


def test_a_fork_deleted_right_after_it_is_made_is_restored_byte_for_byte(
    imported: Path, small_pieces: None
) -> None:
    source = Session.objects.select_related("project").get(path=str(imported / CLAUDE))
    new = session_fork(session=source, turn=2)
    path = Path(new.path)
    raw = path.read_bytes()
    path.unlink()
    report = sessions_import(roots=[imported / r for r in ALL_ROOTS])
    assert report.removed == 1, report
    new.refresh_from_db()
    session_restore(session=new)
    assert path.read_bytes() == raw


def test_with_the_archive_off_a_fork_stores_no_pieces(imported: Path, settings) -> None:
    settings.ARCHIVE = False
    source = Session.objects.select_related("project").get(path=str(imported / CLAUDE))
    new = session_fork(session=source)
    assert new.records.exists() and new.archive_pieces.count() == 0
