"""Gemini CLI sessions rewound in place, undone, and carried on from the page (issue 45).

A rewind appends the CLI's own `{"$rewindTo": <id of prompt N's message>}` (what its
`/rewind` writes; `gemini --resume` then sends turns 1..N-1, tests/compat); its undo cuts
that line away, byte for byte. Fixtures: tests/fixtures/gemini (a session with a rewind and
a reply recorded twice) and tests/fixtures/gemini_resumed (three prompts, each after a
`--resume`, written by the real gemini 0.61.0 against tests/compat/fake_gemini.py: second
metadata lines, `$set.sessionId`, `$set.messages`, and the stub file a resume leaves).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import orjson
import pytest
from django.test import Client

from sessions_app.formats import agent_for
from sessions_app.formats.running import RunEvent, gemini_run_args, run_event, shown_command
from sessions_app.models import Run, Session
from sessions_app.selectors.facts import undo_available
from sessions_app.services.branching import (
    InvalidTurn,
    NothingToUndo,
    SourceChanged,
    WriteCheckFailed,
    session_rewind,
    session_rewind_undo,
)
from sessions_app.services.importing import sessions_import

from .index_check import fresh_import_facts, index_facts

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures"
RESUMED = "ff1739a3-6bda-4ad8-a470-9f052a640e1e"
RESUMED_NAME = "session-2026-11-28T21-42-ff1739a3.jsonl"
RESUMED_STUB = "session-2026-11-28T21-43-ff1739a3.jsonl"  # the third run's resume began it
RESUMED_PROMPTS = ["alpha one", "bravo two", "charlie three"]
# The message ids of those prompts' `user` lines, as the CLI wrote them.
RESUMED_IDS = [
    "563ac50b-d0b7-4431-b7d8-d7bc556e745b",
    "39073771-062b-470a-9483-bc3f9111d212",
    "e8068af0-2159-457a-97f2-9f68df6009a5",
]
DEMO = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
DEMO_PROMPTS = ["list the files", "explain setup.py", "make it longer"]


def _root(tmp_path: Path, settings, fixture: str) -> Path:
    root = tmp_path / ".gemini" / "tmp"
    shutil.copytree(FIXTURES / fixture / "tmp", root)
    for stub in root.glob(f"*/chats/{RESUMED_STUB}"):
        # As the CLI left them: the file it goes on in written last (a checkout's times
        # are its own), so the importer keeps the session from it and skips the stub.
        now = time.time()
        os.utime(stub, (now - 60, now - 60))
        os.utime(stub.with_name(RESUMED_NAME), (now - 30, now - 30))
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    return root


def _prompts(session: Session) -> list[str]:
    return list(session.records.turn_starts().order_by("line").values_list("text", flat=True))


@pytest.fixture
def resumed(tmp_path: Path, settings) -> Session:
    """The session the real CLI wrote over three runs, two of them resumes."""
    _root(tmp_path, settings, "gemini_resumed")
    session = Session.objects.get(session_id=RESUMED)
    assert Path(session.path).name == RESUMED_NAME
    assert _prompts(session) == RESUMED_PROMPTS
    return session


def test_gemini_sessions_offer_rewind_and_runs() -> None:
    gemini = agent_for("gemini")
    assert gemini.can_rewind and gemini.rewinds_by_appending and gemini.run_args is not None


@pytest.mark.parametrize("turn", [2, 3])
def test_a_rewind_appends_the_clis_own_marker_naming_prompt_ns_message(
    resumed: Session, turn: int
) -> None:
    path = Path(resumed.path)
    old = path.read_bytes()

    rewound = session_rewind(session=resumed, turn=turn)

    data = path.read_bytes()
    assert data.startswith(old)
    assert data[len(old) :] == b'{"$rewindTo":"' + RESUMED_IDS[turn - 1].encode() + b'"}\n'
    assert rewound.turn_count == turn - 1 and _prompts(rewound) == RESUMED_PROMPTS[: turn - 1]
    assert rewound.abandoned  # the old turns stay in the file, shown as abandoned
    assert undo_available(rewound)
    assert index_facts() == fresh_import_facts([path.parent.parent.parent])


def test_undo_cuts_the_marker_away_and_gives_back_every_byte(resumed: Session) -> None:
    path = Path(resumed.path)
    old = path.read_bytes()
    mode = path.stat().st_mode
    rewound = session_rewind(session=resumed, turn=2)

    restored = session_rewind_undo(session=rewound)

    assert path.read_bytes() == old and path.stat().st_mode == mode
    assert restored.turn_count == 3 and _prompts(restored) == RESUMED_PROMPTS
    assert restored.rewind_undo == {} and not undo_available(restored)
    assert index_facts() == fresh_import_facts([path.parent.parent.parent])
    # No temporary file is left, and no backup session was needed: nothing was removed.
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([RESUMED_NAME, RESUMED_STUB])
    assert Session.objects.count() == 1
    with pytest.raises(NothingToUndo):
        session_rewind_undo(session=restored)


def test_turn_1_has_nothing_before_it_and_is_refused_with_nothing_written(
    resumed: Session,
) -> None:
    old = Path(resumed.path).read_bytes()
    with pytest.raises(InvalidTurn):
        session_rewind(session=resumed, turn=1)
    assert Path(resumed.path).read_bytes() == old


def test_a_rewind_of_a_rewound_file_and_its_undo_go_back_one_step(tmp_path: Path, settings) -> None:
    """The demo session holds a rewind of its own and a reply recorded twice."""
    root = _root(tmp_path, settings, "gemini")
    session = Session.objects.get(session_id=DEMO)
    path = Path(session.path)
    old = path.read_bytes()

    once = session_rewind(session=session, turn=3)
    after_once = path.read_bytes()
    assert _prompts(once) == DEMO_PROMPTS[:2]
    twice = session_rewind(session=once, turn=2)

    assert _prompts(twice) == DEMO_PROMPTS[:1]
    restored = session_rewind_undo(session=twice)
    assert path.read_bytes() == after_once and _prompts(restored) == DEMO_PROMPTS[:2]
    with pytest.raises(NothingToUndo):  # the undo state is the last rewind's only
        session_rewind_undo(session=restored)
    assert old != after_once and after_once.startswith(old)
    assert index_facts() == fresh_import_facts([root])


def test_undo_is_refused_once_the_cli_wrote_to_the_file(resumed: Session) -> None:
    path = Path(resumed.path)
    rewound = session_rewind(session=resumed, turn=2)
    with path.open("ab") as f:  # a resume appends its `$set` first
        f.write(b'{"$set":{"sessionId":"' + RESUMED.encode() + b'"}}\n')
    now = path.read_bytes()

    with pytest.raises(SourceChanged, match="changed since the rewind"):
        session_rewind_undo(session=rewound)

    assert path.read_bytes() == now


def test_undo_refuses_a_file_whose_earlier_bytes_changed_though_size_and_time_did_not(
    resumed: Session,
) -> None:
    path = Path(resumed.path)
    rewound = session_rewind(session=resumed, turn=3)
    st = path.stat()
    data = path.read_bytes().replace(b"alpha one", b"alpha ONE", 1)
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    with pytest.raises(SourceChanged, match="not the file the rewind left"):
        session_rewind_undo(session=Session.objects.get(pk=rewound.pk))

    assert path.read_bytes() == data
    assert not list(path.parent.glob(".*.tmp"))


def test_a_half_written_last_line_is_not_glued_to_the_marker(
    tmp_path: Path, settings, resumed: Session
) -> None:
    path = Path(resumed.path)
    with path.open("ab") as f:
        f.write(b'{"id":"half')  # a CLI killed mid-line
    sessions_import(roots=settings.SESSION_ROOTS)
    session = Session.objects.get(pk=resumed.pk)
    old = path.read_bytes()

    rewound = session_rewind(session=session, turn=3)

    assert path.read_bytes() == old + b'\n{"$rewindTo":"' + RESUMED_IDS[2].encode() + b'"}\n'
    assert _prompts(rewound) == RESUMED_PROMPTS[:2]
    session_rewind_undo(session=rewound)
    assert path.read_bytes() == old


def test_a_prompt_whose_id_the_chain_cannot_follow_is_refused_and_the_marker_taken_back(
    tmp_path: Path, settings
) -> None:
    """The CLI drops what follows a message id with a ":" (it keys by the id itself), but
    the chain here names such a message by its line: the read-back sees every turn gone."""
    root = tmp_path / ".gemini" / "tmp"
    chats = root / "odd" / "chats"
    chats.mkdir(parents=True)
    source = FIXTURES / "gemini_resumed/tmp/resumed-app/chats" / RESUMED_NAME
    data = source.read_bytes().replace(RESUMED_IDS[1].encode(), b"odd:id", 1)
    path = chats / RESUMED_NAME
    path.write_bytes(data)
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    sessions_import(roots=[root])
    session = Session.objects.get(session_id=RESUMED)
    assert _prompts(session) == RESUMED_PROMPTS

    with pytest.raises(WriteCheckFailed, match="taken back"):
        session_rewind(session=session, turn=2)

    assert path.read_bytes() == data
    session = Session.objects.get(pk=session.pk)
    assert session.turn_count == 3 and session.rewind_undo == {}


def test_the_rewind_page_rewinds_a_gemini_session(resumed: Session, client: Client) -> None:
    url = f"/sessions/{RESUMED}/rewind/"
    assert client.get(url, {"turn": 2}).status_code == 200

    response = client.post(url, {"turn": 2})

    assert response.status_code in (200, 302)
    assert Session.objects.get(pk=resumed.pk).turn_count == 1


# --- Runs from the page: `gemini --resume <id> ... --prompt=<prompt>`.


def test_gemini_run_args_resume_by_id_trust_the_folder_and_keep_the_prompt_one_value() -> None:
    plan = gemini_run_args(session_id="S", prompt="-rf; rm x", mode="plan", model="gemini-2.5")
    assert plan[:4] == ["--resume", "S", "--output-format", "stream-json"]
    assert plan[plan.index("--approval-mode") + 1] == "plan" and "--skip-trust" in plan
    assert plan[plan.index("--model") + 1] == "gemini-2.5"
    assert plan[-1] == "--prompt=-rf; rm x"  # never an option of its own
    edits = gemini_run_args(session_id="S", prompt="p", mode="edits", model="")
    assert edits[edits.index("--approval-mode") + 1] == "auto_edit" and "--model" not in edits
    full = gemini_run_args(session_id="S", prompt="p", mode="full", model="")
    assert full[full.index("--approval-mode") + 1] == "yolo"
    shown = shown_command("gemini", plan, "-rf; rm x")
    assert shown[0] == "gemini" and shown[-1] == "--prompt=<prompt, 9 characters>"


def test_geminis_failed_result_is_a_failure_and_its_error_event_a_note() -> None:
    failed = {"type": "result", "status": "error", "error": {"type": "Error", "message": "401"}}
    assert run_event(failed) == RunEvent(failure="401")
    note = run_event({"type": "error", "severity": "warning", "message": "Loop detected"})
    assert note is not None and not note.failure and "Loop detected" in note.note
    assert run_event({"type": "result", "status": "success", "stats": {}}) is None


# A stand-in for `gemini --resume ...`: it notes its arguments, appends the prompt and a
# reply to the session file as gemini 0.61 does and prints its stream-json events; the
# prompt "fail" makes it append the prompt, print its error result and exit 1.
FAKE_GEMINI = """\
import json, os, sys
args = sys.argv[1:]
open(os.environ["FAKE_GEMINI_ARGV"], "w").write(json.dumps(args))
prompt = args[-1].split("=", 1)[1]
def line(record):
    return json.dumps(record, separators=(",", ":")) + "\\n"
print(json.dumps({"type": "init", "session_id": args[1], "model": "auto"}), flush=True)
with open(os.environ["FAKE_GEMINI_FILE"], "a") as f:
    f.write(line({"$set": {"sessionId": args[1]}}))
    f.write(line({"id": "u-" + str(len(prompt)), "timestamp": "2026-11-28T22:00:00.000Z",
                  "type": "user", "content": [{"text": prompt}]}))
    if prompt == "fail":
        f.flush()
        error = {"type": "Error", "message": "[API Error: 401 Unauthorized]"}
        print(json.dumps({"type": "result", "status": "error", "error": error}), flush=True)
        sys.exit(1)
    f.write(line({"id": "g-" + str(len(prompt)), "timestamp": "2026-11-28T22:00:01.000Z",
                  "type": "gemini", "content": "reply to: " + prompt, "model": "gemini-2.5"}))
print(json.dumps({"type": "message", "role": "assistant", "content": "reply to: " + prompt}))
print(json.dumps({"type": "result", "status": "success", "stats": {}}), flush=True)
"""


@pytest.fixture
def runnable(resumed: Session, tmp_path: Path, settings, monkeypatch) -> Session:
    resumed.cwd = str(tmp_path)  # a folder that exists here
    resumed.save(update_fields=["cwd"])
    script = tmp_path / "gemini"
    script.write_text(f"#!{sys.executable}\n{FAKE_GEMINI}")
    script.chmod(0o755)
    settings.RUN_COMMANDS = {"gemini": str(script)}
    settings.DATA_DIR = tmp_path / "data"  # failed runs' lines are kept there
    monkeypatch.setenv("FAKE_GEMINI_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_GEMINI_FILE", resumed.path)
    return resumed


def _ended_run(deadline: float = 30) -> Run:
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        run = Run.objects.get()
        if run.ended_at is not None:
            return run
        time.sleep(0.05)
    raise AssertionError(f"the run did not end within {deadline} s")


def test_a_gemini_session_is_carried_on_from_the_page(
    client: Client, runnable: Session, tmp_path: Path
) -> None:
    html = client.get(f"/sessions/{RESUMED}/").content.decode()
    assert 'id="run-panel"' in html

    response = client.post(
        f"/sessions/{RESUMED}/runs/",
        {"prompt": "-next step", "mode": "edits", "model": ""},
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200
    run = _ended_run()
    assert run.state == Run.State.FINISHED and run.exit_status == 0, run.message
    argv = orjson.loads((tmp_path / "argv.json").read_bytes())
    assert argv == gemini_run_args(session_id=RESUMED, prompt="-next step", mode="edits", model="")
    assert run.command[:3] == ["gemini", "--resume", RESUMED] or run.command[1:3] == [
        "--resume",
        RESUMED,
    ]
    assert "<prompt, 10 characters>" in run.command[-1] and "-next step" not in run.command
    until = time.monotonic() + 15
    while Session.objects.get(session_id=RESUMED).turn_count == 3:
        assert time.monotonic() < until, "the new turn was not imported"
        time.sleep(0.05)
    assert _prompts(Session.objects.get(session_id=RESUMED)) == [*RESUMED_PROMPTS, "-next step"]


def test_a_failed_gemini_run_says_its_error_and_takes_its_lines_back(
    client: Client, runnable: Session
) -> None:
    before = Path(runnable.path).read_bytes()

    client.post(
        f"/sessions/{RESUMED}/runs/",
        {"prompt": "fail", "mode": "plan", "model": ""},
        HTTP_HX_REQUEST="true",
    )

    run = _ended_run()
    assert run.state == Run.State.FAILED and run.exit_status == 1
    assert run.message.startswith("[API Error: 401 Unauthorized]"), run.message
    assert "taken out and kept in" in run.message
    assert Path(runnable.path).read_bytes() == before
