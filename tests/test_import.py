"""Importing session files: counts, incrementality, idempotence, bad input."""

from __future__ import annotations

import io
import os
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command

from sessions_app.models import Project, Record, Session
from sessions_app.services.importing import sessions_import

from .corpus import ALL_ROOTS, FIXTURES
from .factories import assistant_record, make_session, user_record
from .facts import CODEX_TURNS, FORKS_TREE, SUBAGENT_FILES, TURNS

pytestmark = pytest.mark.django_db


def _session(corpus: Path, relpath: str) -> Session:
    return Session.objects.get(path=str(corpus / relpath))


def test_corpus_imports_with_the_listed_turn_counts(corpus: Path, corpus_roots: list[Path]) -> None:
    report = sessions_import(roots=corpus_roots)
    assert report.errors == []
    for relpath, turns in (TURNS | CODEX_TURNS).items():
        assert _session(corpus, relpath).turn_count == turns, relpath
    assert Session.objects.listed().count() == len(TURNS) + len(CODEX_TURNS)


def test_subagent_files_attach_to_their_parent(corpus: Path, corpus_roots: list[Path]) -> None:
    report = sessions_import(roots=corpus_roots)
    # Counted apart from sessions, in the report and in the line the watcher logs.
    assert report.subagent_files == len(SUBAGENT_FILES)
    # Every session file of the corpus: Claude's and Qwen's (TURNS) and Codex's rollouts.
    sessions = len(TURNS) + len(CODEX_TURNS)
    assert (report.sessions, report.subagents) == (sessions, len(SUBAGENT_FILES))
    n = len(SUBAGENT_FILES)
    expected = f"({n} subagent transcripts), {sessions} sessions and {n} subagent transcripts"
    assert expected in report.summary(), report.summary()
    for relpath, owner in SUBAGENT_FILES.items():
        sub = _session(corpus, relpath)
        assert sub.is_subagent and str(sub.owner_session_id) == owner
    listed_paths = set(Session.objects.listed().values_list("path", flat=True))
    assert not any("agent-" in Path(p).name for p in listed_paths)


def test_second_import_changes_nothing(corpus_roots: list[Path]) -> None:
    sessions_import(roots=corpus_roots)
    before = list(Record.objects.order_by("id").values_list("id", "session_id", "line", "turn"))
    sessions = list(Session.objects.order_by("id").values())
    report = sessions_import(roots=corpus_roots)
    assert report.sessions == 0 and report.records == 0
    corpus_files = len(TURNS) + len(CODEX_TURNS) + len(SUBAGENT_FILES)  # Codex's rollouts too
    assert report.skipped == report.files == corpus_files
    assert (
        list(Record.objects.order_by("id").values_list("id", "session_id", "line", "turn"))
        == before
    )
    assert list(Session.objects.order_by("id").values()) == sessions


def test_unchanged_file_is_not_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = make_session(tmp_path, 2)
    sessions_import(roots=[tmp_path])
    opened: list[Path] = []
    real_open = Path.open

    def spy(self: Path, *args, **kwargs):
        opened.append(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    report = sessions_import(roots=[tmp_path])
    assert report.skipped == 1 and path not in opened


def test_records_point_at_the_exact_bytes(corpus: Path, corpus_roots: list[Path]) -> None:
    sessions_import(roots=corpus_roots)
    session = _session(corpus, FORKS_TREE)
    data = Path(session.path).read_bytes()
    pieces = [data[r.offset : r.offset + r.length] for r in session.records.order_by("line")]
    assert b"".join(pieces) == data
    kinds = set(session.records.values_list("raw_type", flat=True))
    assert {"atis-latch", "agent-name", "api-request-blob"} <= kinds


def test_unknown_record_types_are_kept_byte_exact(tmp_path: Path) -> None:
    path, _records = make_session(tmp_path, 1)
    odd = b'{"type":"future-thing","weird":[1,2,{"x":"\\u00e9"}],"uuid":null}\n'
    with path.open("ab") as f:
        f.write(odd)
    sessions_import(roots=[tmp_path])
    record = Record.objects.get(raw_type="future-thing")
    with path.open("rb") as f:
        f.seek(record.offset)
        assert f.read(record.length) == odd
    assert record.kind == "other"


def test_grown_file_reads_only_new_bytes(tmp_path: Path) -> None:
    path, records = make_session(tmp_path, 2)
    sessions_import(roots=[tmp_path])
    session = Session.objects.get()
    first_ids = list(session.records.order_by("line").values_list("id", flat=True))
    size_before = path.stat().st_size
    sid = records[0]["sessionId"]
    u = user_record(
        "prompt 3", sid=sid, parent=records[-1]["uuid"], timestamp="2026-01-01T01:00:00Z"
    )
    a = assistant_record("answer 3", sid=sid, parent=u["uuid"], timestamp="2026-01-01T01:00:30Z")
    with path.open("ab") as f:
        f.write(orjson.dumps(u) + b"\n" + orjson.dumps(a) + b"\n")
    report = sessions_import(roots=[tmp_path])
    session.refresh_from_db()
    assert report.records == 2
    assert session.turn_count == 3 and session.bytes_imported == path.stat().st_size
    assert list(session.records.order_by("line").values_list("id", flat=True))[:4] == first_ids
    new = session.records.get(line=4)
    assert new.offset == size_before and new.turn == 3 and new.active


def test_half_written_last_line_is_read_again_when_complete(tmp_path: Path) -> None:
    path, records = make_session(tmp_path, 1)
    sid = records[0]["sessionId"]
    u = user_record(
        "second prompt", sid=sid, parent=records[-1]["uuid"], timestamp="2026-01-01T02:00:00Z"
    )
    line = orjson.dumps(u) + b"\n"
    with path.open("ab") as f:
        f.write(line[:25])
    report = sessions_import(roots=[tmp_path])
    session = Session.objects.get()
    assert session.invalid_count == 1 and session.turn_count == 1
    assert any(":3: not valid JSON" in e for e in report.errors)
    with path.open("ab") as f:
        f.write(line[25:])
    sessions_import(roots=[tmp_path])
    session.refresh_from_db()
    assert session.invalid_count == 0 and session.turn_count == 2
    assert session.records.count() == 3


def test_rewritten_file_is_imported_again(tmp_path: Path) -> None:
    path, records = make_session(tmp_path, 3)
    sessions_import(roots=[tmp_path])
    kept = records[:2]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in kept))
    sessions_import(roots=[tmp_path])
    session = Session.objects.get()
    assert session.turn_count == 1 and session.records.count() == 2


def test_rewritten_file_with_a_new_head_is_imported_again(tmp_path: Path) -> None:
    path, records = make_session(tmp_path, 2)
    sessions_import(roots=[tmp_path])
    records[0]["message"]["content"] = "a changed first prompt, and longer than before"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    sessions_import(roots=[tmp_path])
    session = Session.objects.get()
    assert session.first_prompt == "a changed first prompt, and longer than before"
    assert session.records.count() == 4


def test_bad_lines_are_counted_and_named(tmp_path: Path) -> None:
    path, _records = make_session(tmp_path, 2)
    data = path.read_bytes().splitlines(keepends=True)
    data.insert(1, b"{not json\n")
    data.insert(2, b"[1, 2]\n")
    data.insert(3, b"\n")
    path.write_bytes(b"".join(data))
    report = sessions_import(roots=[tmp_path])
    session = Session.objects.get()
    assert session.invalid_count == 3 and session.turn_count == 2
    assert f"{path}:2: not valid JSON" in "\n".join(report.errors)
    assert f"{path}:3: a JSON list, not an object" in report.errors
    assert report.invalid == 3


def test_non_utf8_bytes_do_not_lose_the_record(tmp_path: Path) -> None:
    path, records = make_session(tmp_path, 1)
    sid = records[0]["sessionId"]
    cafe = user_record(
        "caf\u00e9 X", sid=sid, parent=records[-1]["uuid"], timestamp="2026-01-02T00:00:00Z"
    )
    line = orjson.dumps(cafe)
    line = line.replace("\u00e9".encode(), b"\xff") + b"\n"
    with path.open("ab") as f:
        f.write(line)
    sessions_import(roots=[tmp_path])
    session = Session.objects.get()
    assert session.turn_count == 2
    assert session.records.get(line=2).text == "caf\ufffd X"


def test_html_and_control_characters_are_stored_as_text(tmp_path: Path) -> None:
    path, _records = make_session(tmp_path, 0)
    sid = str(uuid.uuid4())
    evil = "<script>alert(1)</script>\x00\x07 [x](javascript:alert(1))"
    path.write_bytes(orjson.dumps(user_record(evil, sid=sid)) + b"\n")
    sessions_import(roots=[tmp_path])
    session = Session.objects.get()
    assert session.turn_count == 1
    assert session.first_prompt.startswith("<script>alert(1)</script>")


def test_huge_line_is_imported_with_bounded_text(tmp_path: Path) -> None:
    path, records = make_session(tmp_path, 1)
    sid = records[0]["sessionId"]
    big = user_record(
        "x" * 5_000_000, sid=sid, parent=records[-1]["uuid"], timestamp="2026-01-02T00:00:00Z"
    )
    with path.open("ab") as f:
        f.write(orjson.dumps(big) + b"\n")
    sessions_import(roots=[tmp_path])
    record = Record.objects.get(line=2)
    assert record.length > 5_000_000 and len(record.text) == 2000
    assert Session.objects.get().turn_count == 2


def test_empty_file_is_a_session_with_nothing_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "-work-empty"
    folder.mkdir()
    (folder / f"{uuid.uuid4()}.jsonl").write_bytes(b"")
    report = sessions_import(roots=[tmp_path])
    assert report.errors == []
    session = Session.objects.get()
    assert session.record_count == 0 and session.turn_count == 0


def test_missing_root_is_reported_and_others_still_import(tmp_path: Path) -> None:
    make_session(tmp_path / "real", 1)
    report = sessions_import(roots=[tmp_path / "nope", tmp_path / "real"])
    assert report.errors == [f"{tmp_path / 'nope'}: session root does not exist"]
    assert Session.objects.count() == 1


def test_file_vanishing_mid_scan_is_reported_and_nothing_is_lost(tmp_path: Path) -> None:
    first, _ = make_session(tmp_path, 1, project="-a")
    second, _ = make_session(tmp_path, 1, project="-b")
    sessions_import(roots=[tmp_path])
    with first.open("ab") as f:
        f.write(b"\n")
    with second.open("ab") as f:
        f.write(b"\n")

    def remove_the_other(source, _size):
        other = second if source.path == first else first
        other.unlink(missing_ok=True)

    report = sessions_import(roots=[tmp_path], progress=remove_the_other)
    assert any("vanished" in e for e in report.errors)
    assert Session.objects.count() == 2
    assert all(s.turn_count == 1 for s in Session.objects.all())


def test_non_session_file_names_are_skipped_with_a_message(tmp_path: Path) -> None:
    folder = tmp_path / "-work-x"
    folder.mkdir()
    (folder / "notes.jsonl").write_text("{}\n")
    report = sessions_import(roots=[tmp_path])
    # Left out, not an error: importing again would change nothing (tests/test_import_skips.py).
    assert report.errors == []
    assert report.left_out == [
        f"{folder / 'notes.jsonl'}: skipped, the file name is not a session id"
    ]


def test_duplicate_session_id_in_two_roots_is_reported(tmp_path: Path) -> None:
    path, _ = make_session(tmp_path / "one", 1)
    copy = tmp_path / "two" / path.parent.name / path.name
    copy.parent.mkdir(parents=True)
    shutil.copy(path, copy)
    report = sessions_import(roots=[tmp_path / "one", tmp_path / "two"])
    assert Session.objects.count() == 1
    assert report.errors == []
    assert [e for e in report.left_out if "already imported from" in e]


def test_project_takes_its_path_from_cwd(corpus_roots: list[Path]) -> None:
    sessions_import(roots=corpus_roots)
    project = Project.objects.get(folder__endswith="-home-dev-code-webapp")
    assert project.path == "/home/dev/code/webapp" and project.session_count == 1
    qwen = Project.objects.get(folder__endswith="-home-dev-code-qwenproj")
    assert qwen.agent == "qwen"


def test_cli_made_branch_is_linked_to_its_source(corpus: Path, corpus_roots: list[Path]) -> None:
    sessions_import(roots=corpus_roots)
    branch = _session(corpus, FORKS_TREE)
    assert branch.kind == "branch" and str(branch.parent.session_id).startswith("1d4a52d5")
    assert branch.title == "my-experiment"
    # It split after the source's 2 turns (the prompts it copied), and was made when it
    # wrote its first record of its own, not when this import found it.
    assert branch.fork_turn == 2
    assert branch.made_at == datetime(2026, 11, 22, 11, 44, 16, 748000, tzinfo=UTC)


def test_the_migration_dates_cli_branches_imported_before(
    corpus_roots: list[Path], corpus: Path
) -> None:
    from importlib import import_module

    from django.apps import apps

    migration = import_module("sessions_app.migrations.0014_cli_branches_split_and_made")
    sessions_import(roots=corpus_roots)
    branch = _session(corpus, FORKS_TREE)
    made, split = branch.made_at, branch.fork_turn
    Session.objects.filter(pk=branch.pk).update(made_at=datetime.now(UTC), fork_turn=None)
    migration.date_branches(apps, None)
    branch.refresh_from_db()
    assert (branch.made_at, branch.fork_turn) == (made, split) == (made, 2)


def test_import_command_prints_summary_and_errors(tmp_path: Path) -> None:
    make_session(tmp_path, 2)
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_sessions",
        "--root",
        str(tmp_path),
        "--root",
        str(tmp_path / "x"),
        stdout=out,
        stderr=err,
    )
    assert "1 file, 1 session imported, 4 records" in out.getvalue()
    assert "session root does not exist" in err.getvalue()


def test_env_roots_are_used_by_default(tmp_path: Path, settings) -> None:
    make_session(tmp_path, 1)
    settings.SESSION_ROOTS = [tmp_path]
    call_command("import_sessions", stdout=io.StringIO(), stderr=io.StringIO())
    assert Session.objects.count() == 1


def test_all_fixture_roots_exist() -> None:
    assert all((FIXTURES / r).is_dir() for r in ALL_ROOTS)
    assert os.access(FIXTURES, os.R_OK)


def test_oversized_and_odd_fields_do_not_break_the_import(tmp_path: Path) -> None:
    folder = tmp_path / "-w"
    folder.mkdir()
    odd = {
        "type": "t" * 100,
        "uuid": "u" * 300,
        "parentUuid": "nul\x00here",
        "gitBranch": "b" * 1000,
        "cwd": "/odd\x00dir",
        "timestamp": "not a time",
    }
    prompt = {
        "type": "user",
        "uuid": "p1",
        "gitBranch": "g" * 1000,
        "timestamp": "2026-13-45T99:99:99Z",
        "message": {"content": "hello"},
    }
    path = folder / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(orjson.dumps(odd) + b"\n" + orjson.dumps(prompt) + b"\n")
    report = sessions_import(roots=[tmp_path])
    # Each bad field is dropped and named with its file and line; the records stay.
    assert report.dropped >= 5
    assert all(e.startswith(f"{path}:") for e in report.errors), report.errors
    assert any(e.startswith(f"{path}:1: cwd: contains NUL") for e in report.errors), report.errors
    session = Session.objects.get()
    assert session.turn_count == 1 and session.record_count == 2
    assert session.git_branch == ""  # a cut branch name would name another branch


def test_stale_fork_temp_files_are_cleaned_up(tmp_path: Path) -> None:
    path, _ = make_session(tmp_path, 1)
    stale = path.parent / f".{uuid.uuid4()}.jsonl.0123abcd.tmp"
    fresh = path.parent / f".{uuid.uuid4()}.jsonl.4567cdef.tmp"
    theirs = path.parent / ".notes.tmp"
    for p in (stale, fresh, theirs):
        p.write_bytes(b"partial")
    old = os.path.getmtime(path) - 7200
    os.utime(stale, (old, old))
    os.utime(theirs, (old, old))
    report = sessions_import(roots=[tmp_path])
    assert not stale.exists() and fresh.exists() and theirs.exists()
    assert report.errors == [f"{stale}: removed, left over by an interrupted fork"]


def test_claudes_ai_title_names_a_session_after_a_custom_title_and_before_the_prompt(
    tmp_path: Path, db
) -> None:
    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    from .factories import make_session

    path, records = make_session(tmp_path / "root", 1)
    sid = records[0]["sessionId"]

    def add(record: dict) -> str:
        with path.open("ab") as f:
            f.write(orjson.dumps(record) + b"\n")
        sessions_import(roots=[tmp_path / "root"])
        return Session.objects.get(path=str(path)).title

    sessions_import(roots=[tmp_path / "root"])
    assert Session.objects.get(path=str(path)).title == "prompt 1"
    assert add({"type": "ai-title", "aiTitle": "Tidy the parser", "sessionId": sid}) == (
        "Tidy the parser"
    )
    assert add({"type": "ai-title", "aiTitle": "Tidy the reader", "sessionId": sid}) == (
        "Tidy the reader"  # the last one wins
    )
    assert add({"type": "custom-title", "customTitle": "mine", "sessionId": sid}) == "mine"
    # Read again from the start, the same.
    session = Session.objects.get(path=str(path))
    session.records.all().delete()
    Session.objects.filter(pk=session.pk).update(file_size=0, bytes_imported=0)
    path.write_bytes(path.read_bytes())
    sessions_import(roots=[tmp_path / "root"])
    again = Session.objects.get(path=str(path))
    assert (again.title, again.ai_title) == ("mine", "Tidy the reader")


def test_the_file_backups_flag_says_what_the_records_say(
    corpus: Path, corpus_roots: list[Path]
) -> None:
    """Kept at import (the transcript reads it instead of scanning records), on a first
    import and on an append."""
    from sessions_app.formats.claude.file_history import RECORD_TYPES

    sessions_import(roots=corpus_roots)
    with_records = set(
        Record.objects.filter(raw_type__in=RECORD_TYPES).values_list("session_id", flat=True)
    )
    flagged = set(Session.objects.filter(file_backups=True).values_list("pk", flat=True))
    assert flagged == with_records and flagged  # the corpus has some, and not everywhere
    assert Session.objects.filter(file_backups=False).exists()

    session = Session.objects.filter(file_backups=False, agent="claude", is_subagent=False)[0]
    snapshot = {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}}
    with open(session.path, "ab") as f:
        f.write(orjson.dumps(snapshot) + b"\n")
    sessions_import(roots=corpus_roots)
    session.refresh_from_db()
    assert session.file_backups
