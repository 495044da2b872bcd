"""The watcher: a tick imports only the paths its events name; every file is looked at
when the watch starts, every BRANCHBOARD_RESCAN_SECONDS, and after a batch of events
too big to trust, so a change the events missed is still found.

The loop's own functions are driven with a clock the test sets: no sleeps, no watcher.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

import pytest

from sessions_app.management.commands import import_sessions as command
from sessions_app.models import ImportStatus, Session, Usage
from sessions_app.services import importing, watching
from sessions_app.services.discovery import discover
from sessions_app.services.discovery.at_path import discover_path

from .factories import assistant_record, jsonl, make_session, one_turn, user_record

EVERY = 600.0


class Clock:
    """A monotonic clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Watcher:
    """The state the watch loop keeps between ticks, and one tick with the paths named."""

    def __init__(self, root: Path) -> None:
        self.roots = [root]
        self.clock = Clock()
        self.reported: set[str] = set()
        self.retry = command.Retry()
        self.rescan = command.Rescan(every=EVERY)

    def tick(self, *named: Path | str, at: float | None = None) -> None:
        if at is not None:
            self.clock.now = at
        paths = {str(p) for p in named}
        command.watch_tick(
            self.roots, paths, self.reported, self.retry, self.rescan, now=self.clock
        )


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


def _append_turn(path: Path, prompt: str) -> None:
    """A new prompt and its answer at the end of the session file, as the CLI writes them."""
    sid = path.stem
    last = Session.objects.get(path=str(path)).records.order_by("-line").first()
    assert last is not None
    user = user_record(prompt, sid=sid, parent=last.uuid)
    answer = assistant_record("done", sid=sid, parent=user["uuid"])
    with path.open("ab") as f:
        f.write(jsonl([user, answer]))


def _lines(path: Path) -> int:
    return Session.objects.get(path=str(path)).line_count


@pytest.fixture
def watched(tmp_path: Path, transactional_db: None) -> tuple[Watcher, list[Path]]:
    """Three sessions in two projects, and a watcher whose first tick has looked at them."""
    root = tmp_path / "root"
    paths = [make_session(root, 2, project=f"-work-p{k % 2}")[0] for k in range(3)]
    watcher = Watcher(root)
    watcher.tick()  # the watch starts: every file is looked at
    assert Session.objects.count() == 3
    return watcher, paths


def test_a_tick_with_one_changed_file_imports_it_and_opens_no_other(
    watched: tuple[Watcher, list[Path]], opened: list[Path]
) -> None:
    watcher, (one, *_others) = watched
    begun = ImportStatus.objects.get().started_at
    _append_turn(one, "the zorblific change")

    watcher.tick(one, at=watcher.clock.now + 5)

    assert opened == [one]
    assert _lines(one) == 6
    # Search and usage caught up with it in the same tick.
    session = Session.objects.get(path=str(one))
    assert session.search_lines == session.usage_lines == 6
    assert Usage.objects.filter(session=session).count() == 3
    # No progress banner for one file: the pass over every file is the only one shown.
    assert ImportStatus.objects.get().started_at == begun
    assert watcher.retry.at is None


def test_a_file_changed_while_events_were_lost_is_found_by_the_next_rescan(
    watched: tuple[Watcher, list[Path]], opened: list[Path]
) -> None:
    watcher, (one, two, _three) = watched
    start = watcher.clock.now
    _append_turn(two, "nobody told the watcher")  # its event was lost
    _append_turn(one, "this one was named")

    watcher.tick(one, at=start + 10)
    assert (_lines(one), _lines(two)) == (6, 4)  # the tick read only the named file

    watcher.tick(at=start + EVERY - 0.5)  # nothing named, the rescan not due yet
    assert _lines(two) == 4 and two not in opened

    watcher.tick(at=start + EVERY)  # the interval is up: every file is looked at
    assert _lines(two) == 6
    assert watcher.rescan.at == start + 2 * EVERY  # the next look is a whole interval away


def test_a_burst_too_big_to_trust_makes_a_rescan(
    watched: tuple[Watcher, list[Path]], opened: list[Path], tmp_path: Path
) -> None:
    """Past MOST_NAMED paths the queue may have overflowed: names are not trusted."""
    watcher, (_one, two, _three) = watched
    _append_turn(two, "lost in the flood")
    flood = {tmp_path / "root" / "-work-flood" / f"{n}.jsonl" for n in range(watching.MOST_NAMED)}

    watcher.tick(*flood, at=watcher.clock.now + 1)  # as many as are trusted: no rescan
    assert _lines(two) == 4 and opened == []

    flood.add(tmp_path / "root" / "-work-flood" / "one-more.jsonl")
    watcher.tick(*flood, at=watcher.clock.now + 1)
    assert _lines(two) == 6


def test_a_new_project_folder_named_by_an_event_is_imported(
    watched: tuple[Watcher, list[Path]], tmp_path: Path
) -> None:
    watcher, _paths = watched
    root = tmp_path / "root"
    by_file = make_session(root, 1, project="-work-new")[0]
    watcher.tick(by_file, at=watcher.clock.now + 1)
    assert Session.objects.filter(path=str(by_file)).exists()

    # A folder made (or moved in) with its file before the watch reached it: only the
    # folder is named.
    by_folder = make_session(root, 1, project="-work-newer")[0]
    watcher.tick(root / "-work-newer", at=watcher.clock.now + 1)
    assert Session.objects.filter(path=str(by_folder)).exists()
    assert Session.objects.get(path=str(by_folder)).project.folder == str(root / "-work-newer")


def test_a_subagent_file_named_by_an_event_joins_its_session(
    watched: tuple[Watcher, list[Path]],
) -> None:
    watcher, (one, *_others) = watched
    agent = one.parent / one.stem / "subagents" / "agent-a1b2c3.jsonl"
    agent.parent.mkdir(parents=True)
    records = one_turn(one.stem, "look around", "looked")
    agent.write_bytes(jsonl([{**r, "isSidechain": True, "agentId": "a1b2c3"} for r in records]))

    watcher.tick(agent, at=watcher.clock.now + 1)

    row = Session.objects.get(path=str(agent))
    assert row.is_subagent and str(row.session_id) == one.stem


def test_a_file_renamed_in_is_imported(watched: tuple[Watcher, list[Path]], tmp_path: Path) -> None:
    watcher, _paths = watched
    outside = make_session(tmp_path / "elsewhere", 1)[0]
    inside = tmp_path / "root" / "-work-p0" / outside.name
    outside.rename(inside)  # watchfiles names the new path as added

    watcher.tick(outside, inside, at=watcher.clock.now + 1)

    assert Session.objects.filter(path=str(inside)).exists()
    assert not Session.objects.filter(path=str(outside)).exists()  # under no root: ignored


def test_a_deleted_file_leaves_its_session_as_a_full_pass_does(
    watched: tuple[Watcher, list[Path]],
) -> None:
    watcher, (one, two, _three) = watched
    one.unlink()
    watcher.tick(one, at=watcher.clock.now + 1)
    assert Session.objects.filter(path=str(one)).exists()
    assert watcher.retry.at is None  # a deletion is no failure

    two.unlink()
    watcher.tick(at=watcher.clock.now + EVERY)  # the full pass does the same
    assert Session.objects.filter(path=str(two)).exists()
    assert watcher.retry.at is None


def test_a_link_or_a_misnamed_file_named_by_an_event_is_left_out_and_said(
    watched: tuple[Watcher, list[Path]],
    tmp_path: Path,
    opened: list[Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    watcher, (one, *_others) = watched
    target = make_session(tmp_path / "elsewhere", 1)[0]
    link = one.parent / f"{uuid.uuid4()}.jsonl"
    link.symlink_to(target)
    notes = one.parent / "notes.jsonl"
    shutil.copy(target, notes)

    with caplog.at_level(logging.INFO, logger="branchboard.importer"):
        watcher.tick(link, notes, at=watcher.clock.now + 1)

    assert opened == []
    assert not Session.objects.filter(path__in=[str(link), str(notes)]).exists()
    assert f"{link}: skipped, a symbolic link" in caplog.text
    assert f"{notes}: skipped, the file name is not a session id" in caplog.text


def test_a_failed_tick_is_tried_again_as_a_pass_over_every_file(
    watched: tuple[Watcher, list[Path]], tmp_path: Path
) -> None:
    watcher, (one, two, _three) = watched
    # A FIFO where a session file would be: an error, so the tick failed.
    fifo = one.parent / f"{uuid.uuid4()}.jsonl"
    os.mkfifo(fifo)
    _append_turn(two, "changed, event lost")
    start = watcher.clock.now
    watcher.tick(fifo, at=start + 1)
    assert watcher.retry.at == start + 1 + watching.FIRST_DELAY
    retry_at = watcher.retry.at
    _append_turn(one, "named, imported, before the retry")
    watcher.tick(one, at=start + 1.5)
    assert _lines(one) == 6 and _lines(two) == 4
    assert watcher.retry.at == retry_at  # one good file does not make up for the failure

    watcher.tick(at=retry_at)  # the retry looks at every file

    assert _lines(two) == 6


def test_discover_path_finds_what_discover_finds(corpus_roots: list[Path], corpus: Path) -> None:
    """The one-path entry keeps discovery's rules: every file, link and odd name of the
    fixture corpus (Codex's dated folders too), named alone, is found (or refused) as the
    whole scan finds it."""
    dated = [corpus / "cli/codex/sessions", corpus / "synthetic/codex/sessions"]
    for root in dict.fromkeys([*corpus_roots, *dated]):
        folder = next(p for p in root.rglob("*") if p.is_dir() and any(p.glob("*.jsonl")))
        (folder / "notes.jsonl").write_bytes(b"{}\n")
        os.symlink(folder / "notes.jsonl", folder / f"{uuid.uuid4()}.jsonl")
        os.mkfifo(folder / f"{uuid.uuid4()}.jsonl")
        files, problems, misnamed = discover(root)
        one_by_one: set = set()
        said: set[str] = set()
        left: set[Path] = set()
        for path in root.rglob("*"):
            found, problems_here, misnamed_here = discover_path(root, path)
            one_by_one.update(found)
            said.update(problems_here)
            left.update(misnamed_here)
        assert files and one_by_one == set(files), root
        assert said == set(problems) and left == set(misnamed), root


def test_a_tick_asks_the_archive_about_the_named_files_only(
    watched: tuple[Watcher, list[Path]],
) -> None:
    """The tick's cost must not grow with the corpus: no query over every session's archive."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    watcher, (one, *_others) = watched
    _append_turn(one, "the quobbling change")

    with CaptureQueriesContext(connection) as queries:
        watcher.tick(one, at=watcher.clock.now + 5)

    archive = [q["sql"] for q in queries if "archivepiece" in q["sql"].lower()]
    ends = [sql for sql in archive if "MAX(" in sql.upper()]
    assert ends, "the tick did not look at the archive's ends"
    assert all("IN (" in sql.upper() for sql in ends), ends
    backups = [
        q["sql"]
        for q in queries
        if "archivedfile" in q["sql"].lower() and "file_backups" in q["sql"]
    ]
    assert all("IN (" in sql.upper() for sql in backups), backups


def test_invalid_lines_are_counted_and_said_but_fail_no_pass(
    tmp_path: Path, transactional_db: None, caplog: pytest.LogCaptureFixture
) -> None:
    # A fresh data folder whose one session has three bad lines: odd bytes, JSON that is
    # no object, and a half-written last line (the CLI was still writing it).
    root = tmp_path / "root"
    path, _ = make_session(root, 2)
    with path.open("ab") as f:
        f.write(b"\xff\xfe odd bytes \x00\n")
        f.write(b"[1, 2, 3]\n")
        f.write(b'{"type": "user", "message": {"role": "us')
    watcher = Watcher(root)

    with caplog.at_level(logging.INFO, logger="branchboard.importer"):
        watcher.tick()  # the watch starts: every file is looked at

    session = Session.objects.get(path=str(path))
    assert session.line_count >= 4
    assert watcher.retry.at is None and watcher.retry.delay == 0.0
    assert "import pass failed" not in caplog.text
    # Each bad line is said, with its file and line, and counted in the summary.
    assert f"{path}:6: a JSON list, not an object" in caplog.text
    assert f"{path}:5:" in caplog.text
    assert "3 invalid lines, 0 bad fields dropped, 0 errors" in caplog.text

    # A bad line appended later, named by an event, fails no tick either.
    caplog.clear()
    _append_turn(path, "after the bad lines")
    with path.open("ab") as f:
        f.write(b"not json at all\n")
    with caplog.at_level(logging.INFO, logger="branchboard.importer"):
        watcher.tick(path, at=watcher.clock.now + 5)
    assert watcher.retry.at is None
    assert "import pass failed" not in caplog.text
