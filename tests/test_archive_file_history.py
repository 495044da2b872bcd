"""The archive keeps a session's file-history backups, and restore to disk writes them back."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from sessions_app.models import Session
from sessions_app.models.archive import ArchivedFile
from sessions_app.selectors.worktrees import file_backups_kept
from sessions_app.services import archive
from sessions_app.services.archive import files as archive_files
from sessions_app.services.archive.restoring import session_restore
from sessions_app.services.importing import sessions_import
from sessions_app.services.worktrees import worktree_fork

from .test_worktree_files import Story
from .test_worktrees import make_repo, run

pytestmark = pytest.mark.django_db

BACKUPS = {"aaaa@v1", "aaaa@v2", "aaaa@v3", "bbbb@v2", "nnnn@v2", "xxxx@v2"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "code" / "app")
    (repo / "a.txt").write_text("a committed\n")
    run("add", "-A", cwd=repo)
    run("commit", "-qm", "files", cwd=repo)
    return repo


@pytest.fixture
def root(tmp_path: Path, settings) -> Path:
    # A restore writes only under a configured root.
    settings.SESSION_ROOTS = [tmp_path / "claude" / "projects"]
    return tmp_path / "claude" / "projects"


def _folder(history: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(history.iterdir())}


def _archived(session: Session) -> dict[str, str]:
    return dict(session.archived_files.values_list("name", "digest"))


def _remove(story: Story, root: Path) -> Session:
    """The session's file and its file-history folder deleted, as a cleanup would."""
    Path(story.session.path).unlink()
    shutil.rmtree(story.history)
    assert sessions_import(roots=[root]).removed == 1
    return Session.objects.get(pk=story.session.pk)


def test_the_backups_are_archived_once_with_their_digests(root: Path, repo: Path) -> None:
    story = Story(root, repo)
    on_disk = _folder(story.history)
    assert set(on_disk) == BACKUPS
    assert _archived(story.session) == {
        name: hashlib.sha256(raw).hexdigest() for name, raw in on_disk.items()
    }
    size = archive.archive_size()
    assert size.files == len(BACKUPS)
    assert size.raw == story.session.bytes_imported + sum(map(len, on_disk.values()))
    # The file grows and one backup more appears: only the new name is read and stored.
    (story.history / "cccc@v1").write_bytes(b"c\n")
    with open(story.session.path, "ab") as f:
        f.write(b'{"type":"last-prompt","lastPrompt":"x"}\n')
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    assert set(_archived(story.session)) == BACKUPS | {"cccc@v1"}
    assert archive.archive_size().files == len(BACKUPS) + 1


def test_restore_brings_the_session_and_its_backups_back_byte_for_byte(
    root: Path, repo: Path
) -> None:
    story = Story(root, repo)
    raw = Path(story.session.path).read_bytes()
    backups = _folder(story.history)
    session = _remove(story, root)
    assert session.file_removed_at is not None and not story.history.exists()

    written = session_restore(session=session)

    assert Path(session.path).read_bytes() == raw
    assert _folder(story.history) == backups
    assert set(written) == {Path(session.path)} | {story.history / n for n in BACKUPS}
    assert written.problems == []
    assert stat.S_IMODE(os.stat(story.history).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(story.history / "aaaa@v1").st_mode) == 0o600
    # The owner's execute bit of a backup is kept (a worktree restore gives it to the file).
    assert stat.S_IMODE(os.stat(story.history / "nnnn@v2").st_mode) == 0o700
    # The transcript's file checkpoints work again: a fork into a worktree gets the files.
    session.refresh_from_db()
    assert file_backups_kept(session)
    made = worktree_fork(session=session, turn=1, slug="back", with_files=True)
    assert made.restored is not None and made.restored.restored == ["a.txt", "b.txt"]
    assert (repo / ".claude" / "worktrees" / "back" / "a.txt").read_text() == "a after turn 1\n"


def test_a_corrupted_backup_is_not_written_and_the_others_are(root: Path, repo: Path) -> None:
    story = Story(root, repo)
    session = _remove(story, root)
    row = session.archived_files.get(name="aaaa@v2")
    row.data = archive.zstd.compress(b"not what was backed up\n")
    row.save()

    written = session_restore(session=session)

    assert not (story.history / "aaaa@v2").exists()
    assert story.history / "aaaa@v2" not in written
    assert (story.history / "aaaa@v3").read_text() == "a after turn 2\n"
    assert len(written.problems) == 1
    assert "aaaa@v2" in written.problems[0] and "corrupted" in written.problems[0]


def test_a_backup_that_is_there_is_never_overwritten(root: Path, repo: Path) -> None:
    story = Story(root, repo)
    Path(story.session.path).unlink()
    (story.history / "aaaa@v1").write_bytes(b"someone else's\n")
    (story.history / "bbbb@v2").unlink()
    assert sessions_import(roots=[root]).removed == 1
    session = Session.objects.get(pk=story.session.pk)

    written = session_restore(session=session)

    assert (story.history / "aaaa@v1").read_bytes() == b"someone else's\n"
    assert (story.history / "bbbb@v2").read_text() == "b after turn 1\n"
    # The same bytes under the same name are the backup itself: nothing to say.
    assert [p.name for p in written[1:]] == ["bbbb@v2"]
    assert len(written.problems) == 1 and "aaaa@v1" in written.problems[0]
    assert "left alone" in written.problems[0]


def test_a_link_in_the_folder_is_not_followed(root: Path, repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not the session's\n")
    story = Story(root, repo)
    (story.history / "ssss@v1").symlink_to(secret)
    (story.history / "not a backup").write_text("x")
    with open(story.session.path, "ab") as f:
        f.write(b'{"type":"last-prompt","lastPrompt":"x"}\n')

    report = sessions_import(roots=[root])

    # Passed over: a link is no backup the CLI wrote (and the secret is not in the archive).
    assert set(_archived(story.session)) == BACKUPS
    assert not report.errors, report.errors
    # Restore does not write through a link at a backup's name either.
    session = _remove(story, root)
    story.history.mkdir()
    (story.history / "aaaa@v1").symlink_to(secret)
    written = session_restore(session=session)
    assert secret.read_text() == "not the session's\n"
    assert os.path.islink(story.history / "aaaa@v1")
    assert any("aaaa@v1" in p and "left alone" in p for p in written.problems)


def test_a_linked_history_folder_is_neither_read_nor_written(
    root: Path, repo: Path, tmp_path: Path
) -> None:
    story = Story(root, repo)
    elsewhere = tmp_path / "elsewhere"
    story.history.rename(elsewhere)
    (elsewhere / "dddd@v1").write_text("d\n")
    story.history.symlink_to(elsewhere)
    with open(story.session.path, "ab") as f:
        f.write(b'{"type":"last-prompt","lastPrompt":"x"}\n')
    report = sessions_import(roots=[root])
    assert "dddd@v1" not in _archived(story.session)
    assert [e for e in report.errors if str(story.history) in e], report.errors


def test_a_backup_over_the_limit_is_reported_not_stored(
    root: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    story = Story(root, repo)
    monkeypatch.setattr(archive_files, "BACKUP_LIMIT", 1000)
    (story.history / "bigg@v1").write_bytes(b"x" * 1001)
    (story.history / "smal@v1").write_bytes(b"x" * 1000)
    with open(story.session.path, "ab") as f:
        f.write(b'{"type":"last-prompt","lastPrompt":"x"}\n')
    report = sessions_import(roots=[root])
    archived = _archived(story.session)
    assert "smal@v1" in archived and "bigg@v1" not in archived
    assert any("bigg@v1" in e and "over the limit" in e for e in report.errors), report.errors


def test_with_the_archive_off_no_backup_is_stored_and_a_later_pass_catches_up(
    root: Path, repo: Path
) -> None:
    with override_settings(ARCHIVE=False):
        story = Story(root, repo)
        assert not ArchivedFile.objects.exists()
    # The file is unchanged: the next pass archives its backups without reading it again.
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    assert set(_archived(story.session)) == BACKUPS


def test_an_unchanged_session_whose_backups_are_not_held_gets_them_on_the_next_pass(
    root: Path, repo: Path
) -> None:
    story = Story(root, repo)
    # As imported before backups were archived: its pieces are whole, its backups absent.
    story.session.archived_files.all().delete()
    report = sessions_import(roots=[root])
    assert report.skipped == 1 and not report.errors, report
    assert set(_archived(story.session)) == BACKUPS


def test_the_command_says_which_backups_it_did_not_restore(root: Path, repo: Path) -> None:
    story = Story(root, repo)
    Path(story.session.path).unlink()
    (story.history / "aaaa@v1").write_bytes(b"someone else's\n")
    sessions_import(roots=[root])
    out, err = io.StringIO(), io.StringIO()

    call_command("restore_session", str(story.session.session_id), stdout=out, stderr=err)

    assert "restored: " in out.getvalue()
    assert "not restored: " in err.getvalue() and "aaaa@v1" in err.getvalue()
