"""Files the import leaves out on purpose: reported once, not a failure, not opened again.

A file whose name is no session id, or whose session id is already imported from
another file, is left out. It is said once (and again only when it changes), it does
not make the watcher's pass a failed one, and an unchanged one is neither opened nor
counted as imported by later passes.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from sessions_app.management.commands import import_sessions as command
from sessions_app.models import Session
from sessions_app.services import importing
from sessions_app.services.importing import sessions_import

from .factories import one_turn, write_session

SID = "00000000-0000-4000-8000-0000000000a1"
OTHER = "00000000-0000-4000-8000-0000000000b2"


def _corpus(root: Path) -> tuple[Path, Path, Path]:
    """A session, a copy of it in another project (same session id), and a file named
    `notes.jsonl`; the copy is older, so the original is the one imported."""
    original = write_session(root / "-work-a", one_turn(SID, "first", "one"))
    write_session(root / "-work-a", one_turn(OTHER, "second", "two"))
    copy = root / "-work-b" / original.name
    copy.parent.mkdir(parents=True)
    shutil.copy(original, copy)
    older = original.stat().st_mtime_ns - 10**9
    os.utime(copy, ns=(older, older))
    notes = root / "-work-a" / "notes.jsonl"
    notes.write_bytes(original.read_bytes())
    return original, copy, notes


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the importer opens, through its own reading function."""
    paths: list[Path] = []
    real = importing.open_regular

    def counting(path: Path, *args: object, **kwargs: object):
        paths.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(importing, "open_regular", counting)
    return paths


@pytest.mark.django_db
def test_left_out_files_are_reported_once_and_not_opened_again(
    tmp_path: Path, opened: list[Path]
) -> None:
    original, copy, notes = _corpus(tmp_path)

    first = sessions_import(roots=[tmp_path])

    assert first.errors == []
    assert first.left_out == [
        f"{notes}: skipped, the file name is not a session id",
        f"{copy}: session id already imported from {original}; skipped",
    ]
    assert (first.sessions, first.records) == (2, 4)  # what was left out is not counted
    assert Session.objects.get(session_id=SID).path == str(original)
    assert copy not in opened and notes not in opened

    opened.clear()
    second = sessions_import(roots=[tmp_path])

    assert (second.errors, second.left_out) == ([], [])
    assert (second.sessions, second.records) == (0, 0)
    assert second.skipped == second.files == 4
    assert opened == []
    assert "0 sessions imported" in second.summary()


@pytest.mark.django_db
def test_a_left_out_file_that_changes_is_reported_again(tmp_path: Path) -> None:
    _original, copy, notes = _corpus(tmp_path)
    sessions_import(roots=[tmp_path])
    with copy.open("ab") as f:
        f.write(copy.read_bytes().splitlines(keepends=True)[-1])

    again = sessions_import(roots=[tmp_path])

    assert again.errors == [] and len(again.left_out) == 1 and str(copy) in again.left_out[0]
    notes.unlink()
    copy.unlink()
    assert sessions_import(roots=[tmp_path]).left_out == []
    shutil.copy(tmp_path / "-work-a" / f"{SID}.jsonl", notes)  # back: said again
    assert sessions_import(roots=[tmp_path]).left_out == [
        f"{notes}: skipped, the file name is not a session id"
    ]


@pytest.mark.django_db
def test_a_second_import_command_says_nothing_changed(tmp_path: Path) -> None:
    _original, copy, notes = _corpus(tmp_path)
    runs = []
    for _ in range(2):
        out, err = io.StringIO(), io.StringIO()
        call_command("import_sessions", "--root", str(tmp_path), stdout=out, stderr=err)
        runs.append((out.getvalue(), err.getvalue()))

    (out1, err1), (out2, err2) = runs
    assert "4 files, 2 sessions imported" in out1 and "2 left out" in out1, out1
    assert str(copy) in err1 and str(notes) in err1
    assert "4 files, 0 sessions imported, 0 records, 4 unchanged" in out2, out2
    assert "left out" not in out2 and err2 == ""


def test_the_watcher_does_not_count_left_out_files_as_failures(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, transactional_db: None
) -> None:
    _original, copy, notes = _corpus(tmp_path)
    retry = command.Retry()
    reported: set[str] = set()
    with caplog.at_level(logging.INFO, logger="branchboard.importer"):
        for _ in range(3):
            command.watch_pass([tmp_path], reported, retry)

    assert "failed" not in caplog.text
    assert retry.delay == 0 and retry.at is None  # nothing to try again
    assert caplog.text.count(str(copy)) == 1 and caplog.text.count(str(notes)) == 1
