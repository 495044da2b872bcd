"""Branch, fork, rewind and undo: files on disk, lineage, guards."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import threading
import time
import uuid
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from sessions_app.models import Session
from sessions_app.services import branching
from sessions_app.services.branching import (
    InvalidSessionId,
    InvalidTurn,
    NothingToUndo,
    OutsideRoots,
    SessionBusy,
    SourceChanged,
    TargetExists,
    UnknownSession,
    session_fork,
    session_lookup,
    session_rewind,
    session_rewind_undo,
)
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, one_turn, user_record, write_session
from .facts import FORKS_TREE, IDEAS_REWIND, QWEN_MID_TURN, TURNS
from .reading import analyse_file

pytestmark = pytest.mark.django_db

QWEN_CLI = "cli/qwen/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl"
WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
BIGREPO = "cli/claude/-home-dev-code-bigrepo/ad8024e4-83f0-4ff3-82f8-4e19f6c9127b.jsonl"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def idle(path: Path) -> None:
    """Make a file look untouched for a minute, as a finished session is."""
    old = time.time() - 60
    os.utime(path, (old, old))


def session_at(corpus: Path, relpath: str) -> Session:
    return Session.objects.select_related("project").get(path=str(corpus / relpath))


def lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_fork_writes_cli_shaped_file_and_keeps_source_bytes(imported: Path) -> None:
    source = session_at(imported, BIGREPO)
    before = digest(Path(source.path))
    new = session_fork(session=source, turn=12)
    assert digest(Path(source.path)) == before
    path = Path(new.path)
    assert path.parent == Path(source.path).parent
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert new.turn_count == 12 and new.parent == source
    assert (new.kind, new.fork_turn) == ("fork", 12)
    originals = {r["uuid"]: r for r in lines(Path(source.path)) if r.get("uuid")}
    copied = lines(path)
    assert copied[-1] == {
        "type": "custom-title",
        "customTitle": new.title,
        "sessionId": str(new.session_id),
    }
    for record in copied[:-1]:
        if "uuid" not in record:
            continue
        original = originals[record["uuid"]]
        assert record["forkedFrom"] == {
            "sessionId": str(source.session_id),
            "messageUuid": record["uuid"],
        }
        assert record["sessionId"] == str(new.session_id)
        expected = dict(original, sessionId=str(new.session_id), forkedFrom=record["forkedFrom"])
        assert record == expected
    # The chain is intact: every parent is in the file.
    uuids = {r["uuid"] for r in copied if r.get("uuid")}
    assert all(r.get("parentUuid") in uuids for r in copied if r.get("parentUuid"))


def test_fast_path_keeps_every_other_byte(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    new = session_fork(session=source, turn=1)
    original = {
        orjson.loads(x)["uuid"]: x
        for x in Path(source.path).read_bytes().splitlines()
        if b'"uuid"' in x
    }
    for raw in Path(new.path).read_bytes().splitlines()[:-1]:
        record = orjson.loads(raw)
        if not record.get("uuid"):
            continue
        old = original[record["uuid"]]
        rebuilt = raw.replace(str(new.session_id).encode(), str(source.session_id).encode(), 1)
        suffix = b',"forkedFrom":{"sessionId":"' + str(source.session_id).encode()
        assert rebuilt[: rebuilt.rindex(suffix)] + b"}" == old


def test_fork_before_turn_keeps_earlier_turns_and_returns_prompt(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    out = io.StringIO()
    call_command(
        "fork_session", str(source.session_id), "--turn", "3", "--before", "--json", stdout=out
    )
    info = orjson.loads(out.getvalue())
    new = Session.objects.get(session_id=info["session_id"])
    assert new.turn_count == 2 and new.kind == "fork_before" and new.fork_turn == 3
    assert info["prompt"] and info["prompt"] in Path(source.path).read_text()
    assert info["resume_command"] == f"cd /home/dev/code/webapp && claude --resume {new.session_id}"
    assert info["parent_id"] == str(source.session_id) and info["turn"] == 3


def test_branch_of_a_tree_keeps_only_the_active_branch(imported: Path) -> None:
    source = session_at(imported, FORKS_TREE)
    new = session_fork(session=source)
    text = Path(new.path).read_text()
    assert "a different prompt after rewind" in text
    assert "one more prompt in the branch" not in text
    assert new.turn_count == 3 and new.abandoned == []
    assert new.title == "my-experiment (Branch)"


def test_titles_count_up_within_the_project(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    titles = [session_fork(session=source).title for _ in range(3)]
    assert titles == [
        "subtract feature (Branch)",
        "subtract feature (Branch 2)",
        "subtract feature (Branch 3)",
    ]
    again = session_fork(session=Session.objects.get(title="subtract feature (Branch 2)"))
    assert again.title == "subtract feature (Branch 4)"


def test_qwen_fork_gets_qwen_title_record_and_resumes_from_it(imported: Path) -> None:
    source = session_at(imported, QWEN_CLI)
    new = session_fork(session=source, turn=2)
    records = lines(Path(new.path))
    title = records[-1]
    assert (title["type"], title["subtype"]) == ("system", "custom_title")
    assert title["systemPayload"] == {"customTitle": "list files (Branch)", "titleSource": "manual"}
    assert title["parentUuid"] == records[-2]["uuid"]
    assert new.turn_count == 2 and new.title == "list files (Branch)"


def test_qwen_mid_turn_session_forks_by_the_one_turn_count(imported: Path) -> None:
    source = session_at(imported, QWEN_MID_TURN)
    new = session_fork(session=source, turn=1)
    assert new.turn_count == 1
    assert "what about h" in Path(new.path).read_text()  # the mid-turn message stays in turn 1


@pytest.mark.parametrize("relpath", sorted(TURNS))
def test_fork_session_on_every_corpus_file(imported: Path, relpath: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    path = imported / relpath
    if TURNS[relpath] == 0:
        with pytest.raises(CommandError, match="has no turns to branch") as exc:
            call_command("fork_session", str(path), stdout=out, stderr=err)
        assert exc.value.returncode == 2
        return
    call_command("fork_session", str(path), "--json", stdout=out)
    info = orjson.loads(out.getvalue())
    assert info["turns"] == TURNS[relpath]
    _, analysis = analyse_file(Path(info["path"]))
    assert analysis.turn_count == TURNS[relpath]
    sessions_import(
        roots=[imported / r for r in ("cli/claude", "public/claude", "cli/qwen", "synthetic/qwen")]
    )
    assert Session.objects.get(session_id=info["session_id"]).turn_count == TURNS[relpath]


def test_claude_rewind_keeps_a_backup_and_undo_restores_bytes(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    path = Path(source.path)
    original = path.read_bytes()
    rewound = session_rewind(session=source, turn=2)
    assert rewound.turn_count == 1 and rewound.session_id == source.session_id
    kept = path.read_bytes().splitlines(keepends=True)
    assert set(kept) <= set(original.splitlines(keepends=True))
    backup = Session.objects.get(session_id=rewound.rewind_undo["backup_id"])
    assert (backup.kind, backup.parent, backup.fork_turn) == ("rewind_backup", rewound, 2)
    assert backup.turn_count == 3 and stat.S_IMODE(Path(backup.path).stat().st_mode) == 0o600
    # Nothing is lost: every record that existed is in some file.
    every = {r["uuid"] for r in lines(Path(backup.path)) if r.get("uuid")}
    assert every >= {orjson.loads(x)["uuid"] for x in original.splitlines() if b'"uuid"' in x}
    restored = session_rewind_undo(session=rewound)
    assert path.read_bytes() == original
    assert restored.turn_count == 3 and restored.rewind_undo == {}


def test_rewind_of_a_tree_resumes_from_the_right_turn(imported: Path) -> None:
    source = session_at(imported, IDEAS_REWIND)
    rewound = session_rewind(session=source, turn=3)
    nodes, analysis = analyse_file(Path(rewound.path))
    prompts = [nodes[i].text for i in analysis.prompt_lines]
    assert len(prompts) == 2 and prompts[1].startswith("I actually don't like much this idea")
    assert rewound.turn_count == 2


def test_qwen_rewind_appends_and_undo_appends_back(imported: Path) -> None:
    source = session_at(imported, QWEN_CLI)
    path = Path(source.path)
    original = path.read_bytes()
    rewound = session_rewind(session=source, turn=2)
    data = path.read_bytes()
    assert data.startswith(original)
    marker = orjson.loads(data[len(original) :])
    assert (marker["type"], marker["subtype"], marker["sessionId"]) == (
        "system",
        "rewind",
        str(source.session_id),
    )
    assert rewound.turn_count == 1
    restored = session_rewind_undo(session=rewound)
    assert restored.turn_count == 3
    nodes, analysis = analyse_file(path)
    assert [nodes[i].text for i in analysis.prompt_lines] == [
        "list files",
        "now make a file hello.txt",
        "summarize",
    ]


def test_undo_is_refused_once_the_session_changed(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    rewound = session_rewind(session=source, turn=3)
    with Path(rewound.path).open("ab") as f:
        f.write(b'{"type":"mode","mode":"x"}\n')
    with pytest.raises(SourceChanged, match="changed since the rewind"):
        session_rewind_undo(session=rewound)
    with pytest.raises(NothingToUndo):
        session_rewind_undo(session=session_at(imported, BIGREPO))


def test_guard_unknown_and_malformed_ids() -> None:
    with pytest.raises(InvalidSessionId):
        session_lookup(ref="../../etc/passwd")
    with pytest.raises(UnknownSession):
        session_lookup(ref=str(uuid.uuid4()))


@pytest.mark.parametrize(
    ("turn", "before"), [(0, False), (4, False), (-1, False), (1, True), (99, True)]
)
def test_guard_turn_out_of_range_writes_nothing(imported: Path, turn: int, before: bool) -> None:
    source = session_at(imported, WEBAPP)
    listing = sorted(Path(source.path).parent.iterdir())
    with pytest.raises(InvalidTurn):
        session_fork(session=source, turn=turn, include_turn=not before)
    assert sorted(Path(source.path).parent.iterdir()) == listing


def test_guard_source_changed_since_import(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    with Path(source.path).open("ab") as f:
        f.write(b"\n")
    listing = sorted(Path(source.path).parent.iterdir())
    with pytest.raises(SourceChanged, match="re-import"):
        session_fork(session=source, turn=1)
    with pytest.raises(SourceChanged):
        session_rewind(session=source, turn=2)
    assert sorted(Path(source.path).parent.iterdir()) == listing


def test_guard_rewind_refuses_a_session_being_written(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    path = Path(source.path)
    os.utime(path)  # written just now
    source.file_mtime_ns = path.stat().st_mtime_ns
    source.save()
    before = digest(path)
    with pytest.raises(SessionBusy, match="still be running"):
        session_rewind(session=source, turn=2)
    assert digest(path) == before


def test_guard_rewind_refuses_an_unanswered_tool_call(tmp_path: Path) -> None:
    folder = tmp_path / "-w"
    sid = str(uuid.uuid4())
    call = {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}
    records = [
        *one_turn(sid, "one", "ok"),
        user_record("two", sid=sid, parent="a1", uuid_="u2", timestamp="2026-01-01T00:00:02Z"),
        assistant_record([call], sid=sid, parent="u2", timestamp="2026-01-01T00:00:03Z"),
    ]
    path = write_session(folder, records)
    idle(path)
    sessions_import(roots=[tmp_path])
    with pytest.raises(SessionBusy, match="tool call that has no result"):
        session_rewind(session=session_lookup(ref=sid), turn=2)


def test_guard_target_exists(imported: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = session_at(imported, WEBAPP)
    taken = uuid.uuid4()
    target = Path(source.path).with_name(f"{taken}.jsonl")
    target.write_bytes(b"precious\n")
    monkeypatch.setattr(branching.uuid, "uuid4", lambda: taken)
    with pytest.raises(TargetExists):
        session_fork(session=source, turn=1)
    assert target.read_bytes() == b"precious\n"
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_guard_path_outside_roots(imported: Path, tmp_path: Path) -> None:
    source = session_at(imported, WEBAPP)
    elsewhere = tmp_path / "elsewhere" / Path(source.path).name
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(Path(source.path).read_bytes())
    Session.objects.filter(pk=source.pk).update(path=str(elsewhere))
    source.refresh_from_db()
    with pytest.raises(OutsideRoots):
        session_fork(session=source)
    assert sorted(p.name for p in elsewhere.parent.iterdir()) == [elsewhere.name]


def test_rewind_command_and_undo_command(imported: Path) -> None:
    source = session_at(imported, WEBAPP)
    out = io.StringIO()
    call_command("rewind_session", str(source.session_id), "--turn", "2", "--json", stdout=out)
    info = orjson.loads(out.getvalue())
    assert info["turns"] == 1 and info["backup_id"]
    out = io.StringIO()
    call_command("rewind_session", str(source.session_id), "--undo", stdout=out)
    assert f"session {source.session_id} restored: 3 turns now" in out.getvalue()
    out = io.StringIO()
    call_command("rewind_session", str(source.session_id), "--turn", "2", stdout=out)
    assert f"session {source.session_id} rewound to turn 2: 1 turn now\n" in out.getvalue()
    assert "(s)" not in out.getvalue()
    call_command("rewind_session", str(source.session_id), "--undo", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no rewind to undo") as exc:
        call_command("rewind_session", str(source.session_id), "--undo", stdout=io.StringIO())
    assert exc.value.returncode == 4


def test_fork_command_errors_have_exit_codes(imported: Path) -> None:
    with pytest.raises(CommandError, match="not a session id") as exc:
        call_command("fork_session", "nope", stdout=io.StringIO())
    assert exc.value.returncode == 2
    with pytest.raises(CommandError, match="no session") as exc:
        call_command("fork_session", str(uuid.uuid4()), stdout=io.StringIO())
    assert exc.value.returncode == 3


@pytest.mark.django_db(transaction=True)
def test_two_forks_at_once_get_different_titles(imported_committed: Path) -> None:
    source = session_at(imported_committed, WEBAPP)
    titles: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def fork() -> None:
        try:
            barrier.wait()
            titles.append(session_fork(session=Session.objects.get(pk=source.pk)).title)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=fork) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(titles) == ["subtract feature (Branch 2)", "subtract feature (Branch)"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"user","uuid":"u","sessionId":"SRC","message":{"content":"x"}}\n',
        b'{"type":"user","uuid":"u","toolUseResult":{"sessionId":"SRC"},"sessionId":"SRC"}\n',
        b'{"uuid":"u","sessionId":"SRC","forkedFrom":{"sessionId":"OLD","messageUuid":"u"}}\n',
        b'{"type":"mode","sessionId":"SRC"}',
        b'{"type":"user","sessionId":"OTHER","message":{"content":"\\"sessionId\\":\\"SRC\\""}}\n',
        b"not json at all\n",
        b'{"a":1}\r\n',
    ],
)
def test_reversible_restamp_round_trips_exactly(line: bytes) -> None:
    from sessions_app.formats.writing import restamp, unstamp

    stamped = restamp(line, source_id="SRC", new_id="NEW-ID", message_uuid="u", reversible=True)
    assert unstamp(stamped, source_id="SRC", new_id="NEW-ID") == line


def test_restamp_sets_the_records_own_session_id() -> None:
    from sessions_app.formats.writing import restamp

    line = b'{"uuid":"u","toolUseResult":{"sessionId":"SRC"},"sessionId":"SRC","v":1}\n'
    out = orjson.loads(restamp(line, source_id="SRC", new_id="NEW", message_uuid="u"))
    assert out["sessionId"] == "NEW" and out["toolUseResult"] == {"sessionId": "SRC"}
    assert out["forkedFrom"] == {"sessionId": "SRC", "messageUuid": "u"}
    again = orjson.loads(
        restamp(orjson.dumps(out) + b"\n", source_id="NEW", new_id="THIRD", message_uuid="u")
    )
    assert (
        again["forkedFrom"] == {"sessionId": "NEW", "messageUuid": "u"}
        and again["sessionId"] == "THIRD"
    )
