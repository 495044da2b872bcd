"""Gemini CLI sessions (0.61 JSONL): found, read, turned, shown, searched and priced (issue 45)."""

from __future__ import annotations

import re
import shutil
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from sessions_app.formats import PROMPT, REWIND, TOOL_RESULT, USER_OTHER, agent_for, parse_line
from sessions_app.models import Record, Session, Usage
from sessions_app.selectors.usage.sessions import session_usage
from sessions_app.services.branching import session_fork
from sessions_app.services.discovery import discover
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh
from sessions_app.services.usage import usage_refresh

pytestmark = pytest.mark.django_db(transaction=True)

HOME = Path(__file__).parent / "fixtures" / "gemini"
DEMO = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
SOURCE_NAME = "session-2026-11-20T10-00-1a2b3c4d.jsonl"
OLD = "9f8e7d6c-1b2a-4c3d-9e8f-0a1b2c3d4e5f"
OTHER = "5e6f7a8b-2c3d-4e5f-8a9b-1c2d3e4f5a6b"
# Counted by hand, by the CLI's rule (tests/fixtures/gemini):
# DEMO: "list the files", "explain setup.py", "make it longer" ("/stats", "?", a blank
#   message and `<session_context>` are not sent again; "make it shorter" was rewound);
# OLD: "hello there", "goodbye" (a functionResponse-only message is a tool result, a
#   `<hook_context>` message is not sent again); OTHER: "one question".
TURNS = {DEMO: 3, OLD: 2, OTHER: 1}


def _home(tmp_path: Path) -> Path:
    home = tmp_path / ".gemini"
    shutil.copytree(HOME, home)
    return home


def _import(tmp_path: Path) -> Path:
    home = _home(tmp_path)
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors, report.errors
    return home


def test_discovery_finds_sessions_by_their_first_line_and_nothing_else(tmp_path: Path) -> None:
    home = _home(tmp_path)

    files, problems, misnamed = discover(home / "tmp")

    assert {(f.session_id, f.agent, f.project_folder.name) for f in files} == {
        (DEMO, "gemini", "demo-app"),
        (OLD, "gemini", OLD_FOLDER),
        (OTHER, "gemini", "other"),
    }
    # The a2a server's stub names no session id; the checkpoint is no `.jsonl` at all.
    assert [p.name for p in misnamed] == ["session-2026-11-21T09-00-a2a-serv.jsonl"]
    assert not problems


OLD_FOLDER = "254cb6c43af8df29db159b576f51396662bd28293277c6acd5b51d78fcb88194"


def test_the_default_root_is_the_gemini_tmp_folder(tmp_path: Path) -> None:
    gemini = agent_for("gemini")
    assert gemini.root_folders == ("tmp",)
    from sessions_app.services.roots import resolve_root

    home = _home(tmp_path)
    assert resolve_root(home) == home / "tmp"


def test_a_name_whose_8_characters_differ_from_its_first_line_is_no_session(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    chats = home / "tmp/other/chats"
    source = chats / "session-2026-11-22T12-00-5e6f7a8b.jsonl"
    source.rename(chats / "session-2026-11-22T12-00-deadbeef.jsonl")

    files, _, misnamed = discover(home / "tmp")

    assert OTHER not in {f.session_id for f in files}
    assert "session-2026-11-22T12-00-deadbeef.jsonl" in [p.name for p in misnamed]


def test_every_fixture_imports_with_its_hand_counted_turns(tmp_path: Path) -> None:
    _import(tmp_path)

    found = {str(s.session_id): s.turn_count for s in Session.objects.filter(agent="gemini")}
    assert found == TURNS
    # One Record row per line.
    demo = Session.objects.get(session_id=DEMO)
    lines = (HOME / "tmp/demo-app/chats/session-2026-11-20T10-00-1a2b3c4d.jsonl").read_bytes()
    assert Record.objects.filter(session=demo).count() == len(lines.splitlines())


def test_turns_follow_the_cli_replay_rewind_and_repeated_ids(tmp_path: Path) -> None:
    _import(tmp_path)
    demo = Session.objects.get(session_id=DEMO)

    prompts = Record.objects.filter(session=demo, kind=PROMPT).order_by("line")
    assert [(r.text, r.active, r.turn) for r in prompts] == [
        ("list the files", True, 1),
        ("explain setup.py", True, 2),
        ("make it shorter", False, None),
        ("make it longer", True, 3),
    ]
    rewind = Record.objects.get(session=demo, kind=REWIND)
    explained = Record.objects.get(session=demo, line=15)  # the reply before "make it shorter"
    assert rewind.parent_uuid == explained.uuid
    # A re-recorded reply replaces its first version: a sibling of it, and the chain goes on
    # from the last version (the first, with no prompt after it, stays in its turn).
    first, last = Record.objects.filter(session=demo, line__in=(5, 7)).order_by("line")
    assert first.parent_uuid == last.parent_uuid
    assert last.uuid != first.uuid and last.turn == 1
    after = Record.objects.get(session=demo, line=8)
    assert after.parent_uuid == last.uuid
    notes = Record.objects.filter(session=demo, kind=USER_OTHER).values_list("line", flat=True)
    assert sorted(notes) == [1, 9, 10, 11, 12, 13, 21]


def test_tool_responses_and_hook_context_are_no_turns() -> None:
    path = next((HOME / "tmp").glob("254*/chats/*.jsonl"))
    kinds = [parse_line("gemini", raw).kind for raw in path.read_bytes().splitlines()]
    assert kinds[4] == TOOL_RESULT and kinds[5] == USER_OTHER and kinds[6] == PROMPT


def test_projects_take_the_real_path_from_the_marker_or_projects_json(tmp_path: Path) -> None:
    _import(tmp_path)

    assert Session.objects.get(session_id=DEMO).project.path == "/home/dev/code/demo-app"
    assert Session.objects.get(session_id=OTHER).project.path == "/home/dev/code/other"
    old = Session.objects.get(session_id=OLD).project
    assert old.path in ("", old.folder) and old.name == OLD_FOLDER


def test_the_summary_is_the_title(tmp_path: Path) -> None:
    _import(tmp_path)

    assert Session.objects.get(session_id=DEMO).title == "Listing and explaining the project files"
    assert Session.objects.get(session_id=OLD).title.startswith("hello there")


def test_an_appended_line_continues_the_chain(tmp_path: Path) -> None:
    home = _import(tmp_path)
    path = home / "tmp/other/chats/session-2026-11-22T12-00-5e6f7a8b.jsonl"
    with path.open("ab") as f:
        f.write(
            b'{"id":"d0000001-0000-4000-8000-000000000003","timestamp":"2026-11-22T12:01:00.000Z",'
            b'"type":"user","content":[{"text":"a second question"}]}\n'
            b'{"id":"d0000001-0000-4000-8000-000000000004","timestamp":"2026-11-22T12:01:09.000Z",'
            b'"type":"gemini","content":"","model":"gemini-2.5-flash"}\n'
            b'{"id":"d0000001-0000-4000-8000-000000000004","timestamp":"2026-11-22T12:01:09.000Z",'
            b'"type":"gemini","content":"a second answer","model":"gemini-2.5-flash"}\n'
        )

    sessions_import(roots=[home / "tmp"])

    session = Session.objects.get(session_id=OTHER)
    assert session.turn_count == 2
    second = Record.objects.get(session=session, line=3)
    assert second.parent_uuid == "d0000001-0000-4000-8000-000000000002"
    again = Record.objects.get(session=session, line=5)
    assert again.parent_uuid == "d0000001-0000-4000-8000-000000000003"
    assert again.uuid == "d0000001-0000-4000-8000-000000000004@5" and again.active


def test_a_fork_is_the_source_lines_before_the_next_prompt_under_a_new_first_line(
    tmp_path: Path,
) -> None:
    home = _import(tmp_path)
    source = Session.objects.get(session_id=DEMO)
    chats = home / "tmp/demo-app/chats"
    before = {p.name: p.read_bytes() for p in chats.iterdir()}

    fork = session_fork(session=source, turn=2)

    path = Path(fork.path)
    new_id = str(fork.session_id)
    assert path.parent == chats and path.name.endswith(f"-{new_id[:8]}.jsonl")
    assert {p.name: p.read_bytes() for p in chats.iterdir() if p != path} == before
    lines = path.read_bytes().splitlines()
    first = orjson.loads(lines[0])
    assert first["sessionId"] == new_id and first["kind"] == "main"
    assert first["projectHash"] == orjson.loads(before[SOURCE_NAME].splitlines()[0])["projectHash"]
    # Lines 1..15 of the source (through turn 2's reply), byte for byte; "make it shorter"
    # (line 16) and what follows are left out.
    assert lines[1:] == before[SOURCE_NAME].splitlines()[1:16]
    assert fork.turn_count == 2 and fork.project_id == source.project_id
    prompts = Record.objects.filter(session=fork, kind=PROMPT, active=True).order_by("line")
    assert [r.text for r in prompts] == ["list the files", "explain setup.py"]


def test_a_fork_leaves_out_the_lines_naming_the_source(tmp_path: Path) -> None:
    home = _import(tmp_path)
    source = Session.objects.get(session_id=DEMO)

    branch = session_fork(session=source)  # the whole session

    lines = Path(branch.path).read_bytes().splitlines()
    assert branch.turn_count == 3
    assert not any(b'"summary"' in raw or DEMO.encode() in raw for raw in lines)
    assert len(lines) == len(before_lines(home)) - 1  # the summary's `$set` line


def before_lines(home: Path) -> list[bytes]:
    return (home / "tmp/demo-app/chats" / SOURCE_NAME).read_bytes().splitlines()


# --- Shown: thoughts, tool calls with their results, notes; found by search.


def test_the_transcript_shows_thoughts_tool_calls_results_and_notes(tmp_path: Path, client) -> None:
    _import(tmp_path)

    page = client.get(f"/sessions/{DEMO}/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "list the files" in html and "Two files: README.md and setup.py." in html
    # A thought; the reply was recorded twice under its id, shown once (its last version).
    # (A collapsed thought's first words are its summary's preview: not a second showing.)
    shown = re.sub(r'<span class="thinking-preview">.*?</span>', "", html)
    assert shown.count("I will run ls to see the files.") == 1
    assert "$ ls" in html or "run_shell_command" in html  # the tool call
    assert "Process Group PGID: 4242" in html  # its result, kept inside the call
    assert "Request failed: quota exceeded" in html  # an error message, as a note
    assert "Shorter." not in html  # the rewound reply is off the active branch


@pytest.mark.parametrize(
    ("query", "session_id"),
    [
        ('"explain setup.py"', DEMO),  # a prompt
        ("zebrafish", DEMO),  # a reply
        ('"PGID: 4242"', DEMO),  # a tool call's output
        ("penguin", OLD),  # a tool-result message's output
    ],
)
def test_search_finds_prompts_replies_and_tool_output(
    tmp_path: Path, client, query: str, session_id: str
) -> None:
    _import(tmp_path)
    search_refresh()

    page = client.get("/search/", {"q": query})

    assert page.status_code == 200 and f"/sessions/{session_id}/" in page.content.decode()


# --- Usage: tokens per reply, keyed by the message id, at Gemini rates.


def test_usage_counts_each_reply_once_at_gemini_rates(tmp_path: Path, client) -> None:
    _import(tmp_path)
    usage_refresh()

    rows = Usage.objects.filter(session__session_id=DEMO)
    # Five replies with tokens; the re-recorded one (no tokens at first) counts once.
    assert rows.count() == 5
    assert (
        sorted(rows.values_list("model", flat=True))
        == ["gemini-2.5-flash"] * 3 + ["gemini-2.5-pro"] * 2
    )
    sums = [sum(rows.values_list(k, flat=True)) for k in ("input_tokens", "cache_read_tokens")]
    assert sums == [700 + 6200, 1400]  # cached tokens are not input at the full rate
    assert sum(rows.values_list("output_tokens", flat=True)) == 60 + 98  # thoughts as output
    total, per_model = session_usage(Session.objects.get(session_id=DEMO))
    assert set(per_model) == {"gemini-2.5-pro", "gemini-2.5-flash"} and total.priced
    # genai-prices: 2.5 Pro $1.25 in / $10 out / $0.125 cached, 2.5 Flash $0.30 / $2.50.
    expected = (
        Decimal(700) * Decimal("1.25")
        + Decimal(60) * 10
        + Decimal(1400) * Decimal("0.125")
        + Decimal(6200) * Decimal("0.3")
        + Decimal(98) * Decimal("2.5")
    ) / 1_000_000
    assert total.cost == expected
    page = client.get("/usage/")
    assert page.status_code == 200 and "gemini-2.5-flash" in page.content.decode()


def test_a_copied_reply_counts_once(tmp_path: Path) -> None:
    home = _home(tmp_path)
    chats = home / "tmp/other/chats"
    text = (chats / "session-2026-11-22T12-00-5e6f7a8b.jsonl").read_text()
    twin = "77777777-2c3d-4e5f-8a9b-1c2d3e4f5a6b"
    reply = (
        '{"id":"d0000001-0000-4000-8000-000000000002","timestamp":"2026-11-22T12:00:09.000Z",'
        '"type":"gemini","content":"one answer","model":"gemini-2.5-flash",'
        '"tokens":{"input":100,"output":10,"cached":0,"thoughts":0,"tool":0,"total":110}}\n'
    )
    (chats / "session-2026-11-22T12-00-5e6f7a8b.jsonl").write_text(text + reply)
    (chats / "session-2026-11-23T12-00-77777777.jsonl").write_text(
        text.replace(OTHER, twin) + reply
    )
    sessions_import(roots=[home / "tmp"])
    usage_refresh()

    rows = Usage.objects.filter(key="d0000001-0000-4000-8000-000000000002")
    assert rows.count() == 2 and rows.filter(copy=True).count() == 1


def test_the_stub_a_resume_leaves_is_reported_once_and_the_session_kept(tmp_path: Path) -> None:
    home = _import(tmp_path)
    chats = home / "tmp/demo-app/chats"
    source = chats / "session-2026-11-20T10-00-1a2b3c4d.jsonl"
    stub = chats / "session-2026-11-28T17-30-1a2b3c4d.jsonl"
    stub.write_bytes(source.read_bytes().splitlines(keepends=True)[0])

    first = sessions_import(roots=[home / "tmp"])
    second = sessions_import(roots=[home / "tmp"])

    assert first.left_out == [f"{stub}: session id already imported from {source}; skipped"]
    assert not second.left_out and not first.errors and not second.errors
    session = Session.objects.get(session_id=DEMO)
    assert session.path == str(source) and session.turn_count == 3
