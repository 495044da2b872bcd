"""Gemini CLI reading beyond one plain 0.61 JSONL file (issue 45): `$set.messages`
replays, sub-agent chats, and files beside the chats that are no sessions."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from sessions_app.formats import PROMPT
from sessions_app.models import Record, Session, Usage
from sessions_app.services.branching import BranchError, session_fork, session_rewind
from sessions_app.services.discovery import discover
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

pytestmark = pytest.mark.django_db(transaction=True)

HOME = Path(__file__).parent / "fixtures" / "gemini_read"
RESUMED = "3c4d5e6f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
SUBAGENT = "7a8b9c0d-2e3f-4a5b-9c6d-7e8f9a0b1c2d"
RESUMED_NAME = "session-2026-12-01T10-00-3c4d5e6f.jsonl"
# Counted by hand, by the CLI's replay (`loadConversationRecord`, 0.61): line 6's
# `$set.messages` keeps "first question" and its answer only; then "third question", and
# "second question again" under the id `$set` dropped, which the CLI adds at the end.
RESUMED_PROMPTS = [
    ("first question", True, 1),
    ("second question", False, None),
    ("third question", True, 2),
    ("second question again", True, 3),
]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / ".gemini"
    shutil.copytree(HOME, home)
    return home


def _import(tmp_path: Path) -> Path:
    home = _home(tmp_path)
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors, report.errors
    return home


def test_set_messages_replaces_the_whole_history_as_the_cli_replays_it(tmp_path: Path) -> None:
    home = _import(tmp_path)
    session = Session.objects.get(session_id=RESUMED, is_subagent=False)

    assert session.turn_count == 3
    prompts = Record.objects.filter(session=session, kind=PROMPT).order_by("line")
    assert [(r.text, r.active, r.turn) for r in prompts] == RESUMED_PROMPTS
    # One Record row per line stays; the `$set` line hangs off the last message it keeps.
    lines = (home / "tmp/resumed/chats" / RESUMED_NAME).read_bytes().splitlines()
    assert Record.objects.filter(session=session).count() == len(lines)
    replaced = Record.objects.get(session=session, line=6)
    assert replaced.parent_uuid == Record.objects.get(session=session, line=3).uuid
    uuids = list(Record.objects.filter(session=session).values_list("uuid", flat=True))
    assert len(set(uuids)) == len(uuids)  # the dropped id, recorded again, is a new uuid


def test_set_messages_on_an_append_replays_the_same(tmp_path: Path) -> None:
    home = _home(tmp_path)
    path = home / "tmp/resumed/chats" / RESUMED_NAME
    whole = path.read_bytes()
    head = whole.splitlines(keepends=True)
    path.write_bytes(b"".join(head[:6]))  # before the resume
    sessions_import(roots=[home / "tmp"])
    path.write_bytes(whole)

    report = sessions_import(roots=[home / "tmp"])

    assert not report.errors, report.errors
    session = Session.objects.get(session_id=RESUMED, is_subagent=False)
    prompts = Record.objects.filter(session=session, kind=PROMPT).order_by("line")
    assert [(r.text, r.active, r.turn) for r in prompts] == RESUMED_PROMPTS


def test_subagent_chats_are_subagents_of_their_parent_session(tmp_path: Path) -> None:
    _import(tmp_path)

    main = Session.objects.get(is_subagent=False, session_id=RESUMED)
    sub = Session.objects.get(is_subagent=True)
    assert str(sub.owner_session_id) == RESUMED
    assert sub.project_id == main.project_id
    assert Session.objects.filter(is_subagent=False).count() == 1  # never a session of its own
    assert sub.turn_count == 1  # "Investigate the build"
    assert Record.objects.filter(session=sub).count() == 4


def test_discovery_takes_chats_and_subagent_chats_and_nothing_else(tmp_path: Path) -> None:
    home = _home(tmp_path)

    files, problems, misnamed = discover(home / "tmp")

    found = {(f.path.name, f.session_id, f.owner_session_id) for f in files}
    assert found == {
        (RESUMED_NAME, RESUMED, None),
        (f"{SUBAGENT}.jsonl", None, RESUMED),
    }
    # `/chat save` checkpoints (a quoted tag too), `logs.json` and `checkpoints/` restore
    # files are none of the chats: not sessions, not even misnamed ones.
    assert misnamed == [] and problems == []


SAME_MINUTE = Path(__file__).parent / "fixtures" / "gemini_same_minute"
SAME_MINUTE_ID = "dc0edc3c-af6b-4f5e-9552-4776a47da969"


def test_a_resume_in_the_same_minute_keeps_the_history_it_lists_again(tmp_path: Path) -> None:
    """Written by the real gemini 0.61.0 ("alpha one", then `--resume latest` "bravo two"
    in the same minute): the resume's first lines join the file, a second metadata line and
    `$set.messages` of the context alone, then the whole history again. The CLI replays
    both prompts; so must the chain (main's reader lost "alpha one"), and a fork of it
    reads back whole."""
    home = tmp_path / ".gemini"
    shutil.copytree(SAME_MINUTE, home)
    assert not sessions_import(roots=[home / "tmp"]).errors
    session = Session.objects.get(session_id=SAME_MINUTE_ID)

    prompts = Record.objects.filter(session=session, kind=PROMPT, active=True).order_by("line")
    assert [(r.text, r.turn) for r in prompts] == [("alpha one", 1), ("bravo two", 2)]
    assert session.turn_count == 2

    fork = session_fork(session=session, turn=1)
    assert fork.turn_count == 1


# --- Older releases' one-document `session-*.json` files.

DOCUMENTS = Path(__file__).parent / "fixtures" / "gemini_documents"
OLD_HASH = "0bf6933e8ef34a3bd42687dda8a365e4f876a36717528baf2e25a671d78459ae"
OLD_DOC = f"tmp/{OLD_HASH}/chats/session-2025-09-16T20-39-38d857b1.json"
OLD_ID = "38d857b1-4c2a-4e1f-9b3d-2a1c0e9f8d7b"
TOOL_DOC = "tmp/toolproj/chats/session-2026-04-24T23-16-c8b2cbd9.json"
TOOL_ID = "c8b2cbd9-7d1e-4f0a-8b6c-5e4d3c2b1a09"
# Counted by hand, by the CLI's rule: the 2025 document (content as strings) has 8
# messages: "List the files in this folder", "Explain b.py, ...", "Thanks — merci, ..." are
# sent again; "/stats" and a blank message are not. The 2026-04 one (parts, `kind`, tool
# calls inline) has 10: "Show me the files", "Now create hello.txt"; an info and an error
# note, the `<session_context>` preamble and "?" are not turns.
OLD_PROMPTS = [
    ("List the files in this folder", 1),
    ('Explain b.py, line by line: "quotes", {braces} and [brackets] included', 2),
    ("Thanks — merci, ça marche", 3),
]
TOOL_PROMPTS = [("Show me the files", 1), ("Now create hello.txt", 2)]


def _documents(tmp_path: Path) -> Path:
    home = tmp_path / ".gemini"
    shutil.copytree(DOCUMENTS, home)
    return home


def _documents_imported(tmp_path: Path) -> Path:
    home = _documents(tmp_path)
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors and not report.left_out, (report.errors, report.left_out)
    return home


@pytest.mark.parametrize(
    ("name", "session_id", "prompts", "messages"),
    [(OLD_DOC, OLD_ID, OLD_PROMPTS, 8), (TOOL_DOC, TOOL_ID, TOOL_PROMPTS, 10)],
)
def test_a_one_document_file_is_a_session_with_numbered_turns(
    tmp_path: Path, name: str, session_id: str, prompts: list, messages: int
) -> None:
    home = _documents_imported(tmp_path)
    session = Session.objects.get(session_id=session_id)

    assert session.turn_count == len(prompts) and session.agent == "gemini"
    found = Record.objects.filter(session=session, kind=PROMPT).order_by("line")
    assert [(r.text, r.turn) for r in found] == prompts
    # A row per record: the whole document (its metadata), then each message, each row
    # naming bytes of the file that parse alone, in the document's order.
    whole = (home / name).read_bytes()
    rows = list(Record.objects.filter(session=session).order_by("line"))
    assert len(rows) == 1 + messages
    assert (rows[0].offset, rows[0].length, rows[0].raw_type) == (0, len(whole), "metadata")
    listed = orjson.loads(whole)["messages"]
    for row, message in zip(rows[1:], listed, strict=True):
        assert orjson.loads(whole[row.offset : row.offset + row.length]) == message
        assert row.uuid == message["id"] and row.active
    assert session.bytes_imported == len(whole) == session.file_size  # archived whole


def test_a_document_shows_thoughts_tool_calls_results_notes_and_its_summary(
    tmp_path: Path, client
) -> None:
    _documents_imported(tmp_path)
    session = Session.objects.get(session_id=TOOL_ID)
    assert session.title == "List and create files"  # its top-level `summary`
    assert session.project.path == "/home/dev/toolproj"
    assert set(session.models_used) == {"gemini-3-pro-preview", "gemini-3-flash-preview"}

    html = client.get(f"/sessions/{TOOL_ID}/").content.decode()

    assert "Show me the files" in html and "The folder is empty." in html
    assert "Run ls." in html  # a thought
    assert "ls -la" in html and "Exit Code: 0" in html  # a tool call and its result
    assert "Created hello.txt" in html
    every = client.get(f"/sessions/{TOOL_ID}/", {"all": "1"}).content.decode()
    assert "Failed to install VS Code companion extension." in every  # a note before turn 1
    old = client.get(f"/sessions/{OLD_ID}/").content.decode()
    assert "I should look at the folder." in old and "De rien!" in old


def test_a_document_counts_its_usage_once_per_reply(tmp_path: Path) -> None:
    _documents_imported(tmp_path)
    usage_refresh()

    rows = Usage.objects.filter(session__session_id=OLD_ID)
    assert rows.count() == 3
    assert sum(rows.values_list("output_tokens", flat=True)) == 20 + 15 + 40 + 5 + 3


def _resumed(document: Path, *more: bytes) -> Path:
    """What the 0.61 CLI writes on resuming `document`: `<name>.jsonl`, its metadata, each
    message, then what the resume adds."""
    data = orjson.loads(document.read_bytes())
    meta = {k: v for k, v in data.items() if k != "messages"}
    lines = [orjson.dumps(meta), *(orjson.dumps(m) for m in data["messages"]), *more]
    continuation = document.with_name(document.name + "l")
    continuation.write_bytes(b"\n".join(lines) + b"\n")
    return continuation


def test_a_document_beside_its_continuation_is_no_session_of_its_own(tmp_path: Path) -> None:
    home = _documents(tmp_path)
    document = home / OLD_DOC
    _resumed(document)

    files, problems, misnamed = discover(home / "tmp")

    assert sorted(f.path.name for f in files if f.session_id == OLD_ID) == [document.name + "l"]
    assert not problems and not misnamed
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors and not report.left_out
    session = Session.objects.get(session_id=OLD_ID)
    assert session.path.endswith(".jsonl") and session.turn_count == 3


def test_a_document_that_changed_is_read_again_whole(tmp_path: Path) -> None:
    home = _documents_imported(tmp_path)
    document = home / TOOL_DOC
    data = orjson.loads(document.read_bytes())
    data["messages"].append(
        {
            "id": "c1000000-0000-4000-8000-00000000000b",
            "timestamp": "2026-04-24T23:18:00.000Z",
            "type": "user",
            "content": [{"text": "And delete it"}],
        }
    )
    document.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))

    report = sessions_import(roots=[home / "tmp"])

    assert not report.errors
    session = Session.objects.get(session_id=TOOL_ID)
    assert session.turn_count == 3 and session.records.count() == 12


def test_a_document_is_not_rewound_and_says_why(tmp_path: Path, client) -> None:
    home = _documents_imported(tmp_path)
    session = Session.objects.get(session_id=OLD_ID)
    before = sorted(p.name for p in (home / OLD_DOC).parent.iterdir())
    document = (home / OLD_DOC).read_bytes()

    page = client.get(f"/sessions/{OLD_ID}/").content.decode()
    assert "Edit &amp; fork" in page and "Rewind to here" not in page  # not offered
    with pytest.raises(BranchError, match="not rewound in place: fork it before the turn"):
        session_rewind(session=session, turn=2)  # a `$rewindTo` would break the document

    assert sorted(p.name for p in (home / OLD_DOC).parent.iterdir()) == before
    assert (home / OLD_DOC).read_bytes() == document


@pytest.mark.parametrize(
    ("name", "session_id", "prompts", "turn", "include_turn", "kept_messages"),
    [
        (OLD_DOC, OLD_ID, OLD_PROMPTS, 1, True, 3),  # prompt, reply, `/stats` (no turn)
        (OLD_DOC, OLD_ID, OLD_PROMPTS, 3, False, 6),  # before turn 3: a blank one too
        (OLD_DOC, OLD_ID, OLD_PROMPTS, None, True, 8),  # branch: every message
        (TOOL_DOC, TOOL_ID, TOOL_PROMPTS, 1, True, 7),  # the notes and context before turn 1
    ],
)
def test_a_document_forks_into_a_jsonl_of_the_cli_s_current_shape(
    tmp_path: Path,
    name: str,
    session_id: str,
    prompts: list,
    turn: int | None,
    include_turn: bool,
    kept_messages: int,
) -> None:
    home = _documents_imported(tmp_path)
    source = Session.objects.get(session_id=session_id)
    document = home / name
    before = document.read_bytes()

    fork = session_fork(session=source, turn=turn, include_turn=include_turn)

    assert document.read_bytes() == before  # the user's file is untouched
    path = Path(fork.path)
    assert path.parent == document.parent and path.suffix == ".jsonl"
    assert path.name == f"session-{path.name[8:24]}-{str(fork.session_id)[:8]}.jsonl"
    lines = path.read_bytes().splitlines()
    meta = orjson.loads(lines[0])
    data = orjson.loads(before)
    # The metadata line: the new id, the source's project, no messages and no summary.
    assert meta["sessionId"] == str(fork.session_id) != session_id
    assert meta["projectHash"] == data["projectHash"] and meta["kind"] == "main"
    assert "messages" not in meta and "summary" not in meta
    # Then each kept message on a line of its own, exactly as it stood in the document.
    assert [orjson.loads(line) for line in lines[1:]] == data["messages"][:kept_messages]
    kept = len(prompts) if turn is None else (turn if include_turn else turn - 1)
    assert fork.turn_count == kept
    found = Record.objects.filter(session=fork, kind=PROMPT, active=True).order_by("line")
    assert [(r.text, r.turn) for r in found] == prompts[:kept]
    assert fork.records.count() == len(lines)  # a row per line, as for any .jsonl


def test_the_continuation_of_an_imported_document_takes_its_session_over(tmp_path: Path) -> None:
    home = _documents_imported(tmp_path)
    before = Session.objects.get(session_id=OLD_ID)
    continuation = _resumed(
        home / OLD_DOC,
        b'{"id":"b1000000-0000-4000-8000-000000000009","timestamp":"2026-12-01T10:00:00.000Z",'
        b'"type":"user","content":[{"text":"a question after the resume"}]}',
    )

    report = sessions_import(roots=[home / "tmp"])

    assert not report.errors and not report.left_out, (report.errors, report.left_out)
    session = Session.objects.get(session_id=OLD_ID)
    assert session.pk == before.pk and session.path == str(continuation)
    assert session.turn_count == 4 and session.records.count() == 1 + 8 + 1
    assert Session.objects.filter(agent="gemini", is_subagent=False).count() == 2


# --- The public corpus (`../shared/corpus/public/gemini`, real files from other machines).

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "public" / "gemini"
# Turns per session id prefix (the file name's last 8), from the corpus README's table.
PUBLIC_TURNS = {
    "38d857b1": 3,  # Sep 2025, one document, content as strings
    "4c16047e": 6,  # Oct 2025, one document
    "260e1681": 25,  # Jan 2026, one document, slug folder, summary, info and error notes
    "233c8b2b": 5,  # Feb 2026, one document, parts, 8 run_shell_command calls
    "c8b2cbd9": 5,  # Apr 2026, JSONL, 13 `$set`, a repeated id
    "aacdfa4e": 14,  # May 2026, JSONL, 39 `$set`, 10 repeated ids
}


def test_the_public_gemini_files_give_their_readme_turns(tmp_path: Path) -> None:
    if not PUBLIC.is_dir():
        pytest.skip(f"{PUBLIC} is absent: the public corpus lies beside the repository")
    home = tmp_path / ".gemini"
    shutil.copytree(PUBLIC, home)

    report = sessions_import(roots=[home / "tmp"])

    assert not report.errors, report.errors
    found = {str(s.session_id)[:8]: s.turn_count for s in Session.objects.filter(agent="gemini")}
    assert found == PUBLIC_TURNS
    # The a2a server's stub names no UUID (a misnamed file); the `/chat save` checkpoint
    # is no session at all.
    assert [Path(m.split(":")[0]).name for m in report.left_out] == [
        "session-2026-07-05T12-27-a2a-serv.jsonl"
    ]
    mictlan = next(s for s in Session.objects.all() if str(s.session_id).startswith("260e1681"))
    assert mictlan.title == "Understand Git object internals and compression."


def test_the_watcher_finds_a_document_by_its_path_and_not_once_superseded(tmp_path: Path) -> None:
    home = _documents(tmp_path)
    document = home / OLD_DOC

    report = sessions_import(roots=[home / "tmp"], paths=[document])

    assert not report.errors and Session.objects.get(session_id=OLD_ID).path == str(document)
    continuation = _resumed(document)
    report = sessions_import(roots=[home / "tmp"], paths=[document, continuation])
    assert not report.errors and not report.left_out
    assert Session.objects.get(session_id=OLD_ID).path == str(continuation)


RESUMED_FIXTURE = Path(__file__).parent / "fixtures" / "gemini_resumed"
RESUMED_APP = "ff1739a3-6bda-4ad8-a470-9f052a640e1e"
RESUMED_APP_FILE = "session-2026-11-28T21-42-ff1739a3.jsonl"
RESUMED_APP_STUB = "session-2026-11-28T21-43-ff1739a3.jsonl"


@pytest.mark.parametrize("stub_first", [True, False])
def test_a_resume_s_stub_never_holds_the_session_whatever_the_files_times(
    tmp_path: Path, stub_first: bool
) -> None:
    """A resume leaves a stub named for its minute (its first line and the context alone,
    the same id). Which file the import meets first (a copy's times, a resume that sent
    nothing leaves the stub newest) must not matter: the session is the file with turns."""
    root = tmp_path / ".gemini" / "tmp"
    shutil.copytree(RESUMED_FIXTURE / "tmp", root)
    chats = root / "resumed-app" / "chats"
    if stub_first:  # the stub alone at first: a pass that met it before the session's file
        held = tmp_path / RESUMED_APP_FILE
        (chats / RESUMED_APP_FILE).rename(held)
        sessions_import(roots=[root])
        assert Session.objects.get(session_id=RESUMED_APP).turn_count == 0
        held.rename(chats / RESUMED_APP_FILE)
    else:  # both there, the stub written last
        os.utime(chats / RESUMED_APP_STUB, (2_000_000_000, 2_000_000_000))

    report = sessions_import(roots=[root])
    again = sessions_import(roots=[root])

    assert not report.errors and not again.errors
    session = Session.objects.get(session_id=RESUMED_APP)
    assert Path(session.path).name == RESUMED_APP_FILE and session.turn_count == 3
    found = Record.objects.filter(session=session, kind=PROMPT, active=True).order_by("line")
    assert [r.text for r in found] == ["alpha one", "bravo two", "charlie three"]
    said = report.left_out + again.left_out
    assert [m for m in said if RESUMED_APP_STUB in m] == [
        f"{chats / RESUMED_APP_STUB}: session id already imported from "
        f"{chats / RESUMED_APP_FILE}; skipped"
    ]
