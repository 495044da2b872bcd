"""A session whose file was removed: kept by the archive, marked, readable, forkable, restorable."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command

from sessions_app.models import ArchivePiece, Session
from sessions_app.services import archive
from sessions_app.services.archive.restoring import RestoreRefused, session_restore
from sessions_app.services.branching import SourceChanged, session_fork, session_rewind
from sessions_app.services.importing import sessions_import

from .corpus import ALL_ROOTS

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _configured_roots(settings, corpus_copy) -> None:
    """A restore writes only under a configured root: the corpus's roots are."""
    settings.SESSION_ROOTS = [corpus_copy.path / r for r in ALL_ROOTS]


WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def _remove(corpus: Path) -> tuple[Session, bytes]:
    """Delete the webapp session's file as a CLI's cleanup would; import again."""
    path = corpus / WEBAPP
    raw = path.read_bytes()
    path.unlink()
    report = sessions_import(roots=[corpus / r for r in ALL_ROOTS])
    assert report.removed == 1, report
    return Session.objects.get(session_id=WEBAPP_ID), raw


def test_a_removed_session_is_marked_and_its_pages_and_export_keep_working(
    client, imported: Path
) -> None:
    exports = [f"/sessions/{WEBAPP_ID}/export.{fmt}" for fmt in ("md", "html")]
    before = [b"".join(client.get(url).streaming_content) for url in exports]
    session, raw = _remove(imported)
    assert session.file_removed_at is not None
    page = client.get(f"/sessions/{WEBAPP_ID}/")
    text = page.content.decode()
    assert page.status_code == 200
    assert f"removed from disk on {session.file_removed_at:%Y-%m-%d}, kept here" in text
    # "archived" is Codex's word for its own archive folder (the cli-archived badge).
    badge = text.split('id="file-removed"', 1)[1].split("</span>", 1)[0].split(">", 1)[1]
    assert "archived" not in badge
    assert "Restore to disk" in text
    # The transcript's records are read from the archive: the first prompt's text is shown.
    first = session.records.turn_starts().order_by("line").first()
    assert first is not None and first.text[:30] in text
    export = client.get(f"/sessions/{WEBAPP_ID}/export.jsonl")
    assert export.status_code == 200 and b"".join(export.streaming_content) == raw
    # Markdown and HTML exports read every record: from the archive, the same as from the file.
    assert [b"".join(client.get(url).streaming_content) for url in exports] == before
    listed = client.get(f"/projects/{session.project_id}/?removed=1").content.decode()
    assert "removed from disk, kept here" in listed and WEBAPP_ID in listed
    assert "archived: file removed" not in listed
    others = session.project.sessions.exclude(pk=session.pk).filter(is_subagent=False)
    for other in others:
        assert str(other.session_id) not in listed


def test_branch_and_fork_of_a_removed_session_write_a_new_file_and_rewind_is_refused(
    imported: Path,
) -> None:
    session, _ = _remove(imported)
    branch = session_fork(session=session)
    assert Path(branch.path).parent == Path(session.path).parent
    assert Path(branch.path).exists() and branch.turn_count == session.turn_count
    fork = session_fork(session=session, turn=1)
    assert fork.turn_count == 1 and Path(fork.path).exists()
    with pytest.raises(SourceChanged, match="no file to rewind"):
        session_rewind(session=session, turn=2)
    assert not Path(session.path).exists()


def test_restore_writes_the_file_back_byte_for_byte_and_the_next_import_skips_it(
    imported: Path,
) -> None:
    session, raw = _remove(imported)
    out = io.StringIO()
    call_command("restore_session", WEBAPP_ID, stdout=out)
    path = imported / WEBAPP
    assert f"restored: {path}" in out.getvalue()
    assert path.read_bytes() == raw
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    report = sessions_import(roots=[imported / r for r in ALL_ROOTS])
    assert report.sessions == 0 and report.removed == 0 and not report.errors
    session.refresh_from_db()
    assert session.file_removed_at is None
    # Rewind works again: there is a file.
    assert session_rewind(session=session, turn=2).turn_count == 1


def test_restore_is_refused_when_a_file_is_there(imported: Path) -> None:
    session, _ = _remove(imported)
    path = imported / WEBAPP
    path.write_bytes(b"someone else's\n")
    with pytest.raises(RestoreRefused, match="exists"):
        session_restore(session=session)
    assert path.read_bytes() == b"someone else's\n"


def test_a_corrupted_piece_refuses_the_restore_and_writes_nothing(imported: Path) -> None:
    session, raw = _remove(imported)
    piece = session.archive_pieces.order_by("start").first()
    assert piece is not None
    ArchivePiece.objects.filter(pk=piece.pk).update(
        data=archive.zstd.compress(raw[: piece.length].replace(b"a", b"b"))
    )
    with pytest.raises(RestoreRefused, match="corrupted"):
        session_restore(session=session)
    assert not (imported / WEBAPP).exists()


def test_restore_by_the_api_and_the_page(client, imported: Path, token: str) -> None:
    _, raw = _remove(imported)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    response = client.post(f"/api/sessions/{WEBAPP_ID}/restore", **headers)
    assert response.status_code == 200, response.content
    assert orjson.loads(response.content)["restored"] == [str(imported / WEBAPP)]
    assert (imported / WEBAPP).read_bytes() == raw
    again = client.post(f"/api/sessions/{WEBAPP_ID}/restore", **headers)
    assert again.status_code == 409 and "exists" in orjson.loads(again.content)["error"]
    (imported / WEBAPP).unlink()
    page = client.post(f"/sessions/{WEBAPP_ID}/restore/")
    assert page.status_code == 302 and (imported / WEBAPP).read_bytes() == raw


@pytest.mark.parametrize("imported_again", [True, False])
def test_a_removed_session_offers_no_rewind_and_says_why(
    client, imported: Path, imported_again: bool
) -> None:
    before = client.get(f"/sessions/{WEBAPP_ID}/").content.decode()
    assert "Rewind to here" in before and 'id="rewind-refusal"' not in before
    if imported_again:
        _remove(imported)
    else:  # gone since the last import: the page looks at the disk, not at the index alone
        (imported / WEBAPP).unlink()

    page = client.get(f"/sessions/{WEBAPP_ID}/").content.decode()

    assert "Rewind to here" not in page and "A backup session keeps" not in page
    assert 'id="undo-rewind"' not in page
    refusal = page.split('id="rewind-refusal"', 1)[1].split("</p>", 1)[0]
    assert "no file to rewind" in refusal and "Restore it to disk first" in refusal
    assert "Branch from here" in page  # what can be done still is
