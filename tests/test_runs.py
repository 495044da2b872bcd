"""Runs from the pages: who may start one, one at a time, a gone process shown as ended.

The real CLIs run in tests/browser/test_runs_browser.py; here the refusals and the
bookkeeping, with real processes where a process is needed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import orjson
import pytest
from django.contrib.auth.models import Permission, User
from django.db import IntegrityError, transaction
from django.test import Client

from sessions_app.formats.running import (
    BadRunInput,
    RunEvent,
    check_run_input,
    claude_run_args,
    codex_run_args,
    qwen_run_args,
    run_event,
    shown_command,
)
from sessions_app.models import Run, Session
from sessions_app.resume import resume_command
from sessions_app.services.branching import SessionBusy, session_rewind
from sessions_app.services.importing import sessions_import
from sessions_app.services.process_groups import start_time
from sessions_app.services.runs import current_run, run_refresh
from sessions_app.services.runs.following import follow

from .factories import make_session, user_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(tmp_path: Path, settings) -> Session:
    root = tmp_path / "root"
    _, records = make_session(root, 3)
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    # A command that exists here (the page offers the prompt box only then), whether or
    # not `claude` is installed; tests that start a run name their own.
    settings.RUN_COMMANDS = {"claude": "true"}
    sessions_import(roots=[root])
    found = Session.objects.get(session_id=records[0]["sessionId"])
    found.cwd = str(tmp_path)  # a folder that exists here
    found.save(update_fields=["cwd"])
    return found


def sleeper() -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )


def open_run(session: Session, proc: subprocess.Popen | None = None) -> Run:
    pid = proc.pid if proc else None
    return Run.objects.create(
        session=session,
        actor="someone",
        prompt="p",
        mode="plan",
        command=["claude"],
        cwd=session.cwd,
        pid=pid,
        pid_start=start_time(pid) if pid else None,
    )


def test_the_command_lines_keep_the_prompt_one_argument() -> None:
    args = claude_run_args(session_id="S", prompt="-rf; rm x", mode="full", model="opus")
    assert args[-2:] == ["--", "-rf; rm x"]
    assert args[args.index("--permission-mode") + 1] == "bypassPermissions"
    assert args[args.index("--model") + 1] == "opus"
    qwen = qwen_run_args(session_id="S", prompt="-x", mode="edits", model="")
    assert qwen[-1] == "--prompt=-x" and "--model" not in qwen
    assert qwen[qwen.index("--approval-mode") + 1] == "auto-edit"
    shown = shown_command("qwen", qwen, "-x")
    assert shown[-1] == "--prompt=<prompt, 2 characters>"


@pytest.mark.parametrize(
    ("prompt", "mode", "model", "why"),
    [
        ("  ", "plan", "", "empty"),
        ("hi", "root", "", "permission mode"),
        ("hi", "plan", "--dangerously-skip-permissions", "not a model"),
        ("a\x00b", "plan", "", "NUL"),
        ("x" * 100_001, "plan", "", "over 100,000"),
    ],
)
def test_bad_run_input_is_refused(prompt: str, mode: str, model: str, why: str) -> None:
    with pytest.raises(BadRunInput, match=why):
        check_run_input(prompt, mode, model)


def test_the_page_refuses_bad_input_and_a_missing_cli(
    client: Client, session: Session, settings
) -> None:
    url = f"/sessions/{session.session_id}/runs/"
    response = client.post(url, {"prompt": "", "mode": "plan"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "the prompt is empty" in response.content.decode()
    settings.RUN_COMMANDS = {"claude": "definitely-not-a-command-here"}
    response = client.post(url, {"prompt": "hi", "mode": "plan"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert "definitely-not-a-command-here: no such command" in response.content.decode()
    assert "BRANCHBOARD_CLAUDE_COMMAND" in response.content.decode()
    assert not Run.objects.exists()


def test_a_cli_that_is_not_installed_is_said_instead_of_the_prompt_box(
    client: Client, session: Session, settings
) -> None:
    settings.RUN_COMMANDS = {"claude": "definitely-not-a-command-here"}
    why = (
        "definitely-not-a-command-here: no such command on this machine&#x27;s PATH; "
        "install Claude Code or set BRANCHBOARD_CLAUDE_COMMAND to its path"
    )
    for url in (f"/sessions/{session.session_id}/", f"/sessions/{session.session_id}/runs/panel/"):
        page = client.get(url, HTTP_HX_REQUEST="true" if "panel" in url else None).content
        assert 'id="run-form"' not in page.decode(), url  # nothing to type in vain
        assert 'id="run-no-cli"' in page.decode() and why in page.decode(), url
    settings.RUN_COMMANDS = {"claude": "true"}  # installed: the box is back
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert 'id="run-form"' in page and 'id="run-no-cli"' not in page
    assert not Run.objects.exists()


def test_a_session_whose_folder_is_not_here_cannot_be_run(client: Client, session: Session) -> None:
    session.cwd = "/nowhere/at/all"
    session.save(update_fields=["cwd"])
    response = client.post(
        f"/sessions/{session.session_id}/runs/",
        {"prompt": "hi", "mode": "plan"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400 and "/nowhere/at/all" in response.content.decode()


def test_one_run_per_session_at_a_time(client: Client, session: Session, settings) -> None:
    proc = sleeper()
    try:
        going = open_run(session, proc)
        with pytest.raises(IntegrityError), transaction.atomic():
            open_run(session)  # the database refuses a second open run
        settings.RUN_COMMANDS = {"claude": sys.executable}  # any command that exists
        response = client.post(
            f"/sessions/{session.session_id}/runs/",
            {"prompt": "hi", "mode": "plan"},
            HTTP_HX_REQUEST="true",
        )
        assert response.status_code == 409
        assert f"run {going.pk} (someone" in response.content.decode()
        # The dashboard's own rewind waits for the run too.
        with pytest.raises(SessionBusy, match=f"run {going.pk} of someone"):
            session_rewind(session=session, turn=2)
    finally:
        proc.kill()
        proc.wait()
    assert Run.objects.count() == 1


def test_a_run_whose_process_is_gone_is_shown_as_ended(client: Client, session: Session) -> None:
    proc = sleeper()
    run = open_run(session, proc)
    assert current_run(session) == run
    proc.kill()
    proc.wait()
    assert current_run(session) is None
    run.refresh_from_db()
    assert run.state == "lost" and run.ended_at is not None
    assert "its process is gone" in run.message
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert "ended (its process is gone)" in page and 'id="run-form"' in page


def test_a_page_that_took_a_run_for_gone_still_asks_until_its_follower_says(
    client: Client, session: Session
) -> None:
    """A page may mark a run lost a moment before the thread following its CLI records
    how it ended (stopped, finished): the panel keeps asking for a while, then stops."""
    from datetime import timedelta

    from django.utils import timezone

    run = open_run(session)
    url = f"/sessions/{session.session_id}/runs/panel/"
    Run.objects.filter(pk=run.pk).update(state="lost", ended_at=timezone.now())
    panel = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "ended (its process is gone)" in panel and 'hx-trigger="every 1s"' in panel
    # The follower records the stop: the next poll shows it, and polling ends.
    Run.objects.filter(pk=run.pk).update(state="stopped")
    panel = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert ">stopped<" in panel and "hx-trigger" not in panel
    # Lost for good: after a while nobody is coming to say otherwise.
    Run.objects.filter(pk=run.pk).update(
        state="lost", ended_at=timezone.now() - timedelta(seconds=20)
    )
    panel = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "ended (its process is gone)" in panel and "hx-trigger" not in panel


def test_a_reused_pid_is_not_taken_for_the_run(session: Session) -> None:
    proc = sleeper()
    try:
        run = open_run(session, proc)
        run.pid_start = (run.pid_start or 0) + 1  # the same pid, another process
        run.save(update_fields=["pid_start"])
        assert run_refresh(run).state == "lost"
    finally:
        proc.kill()
        proc.wait()


def test_runs_are_off_on_a_team_server_unless_allowed_and_granted(
    team, session: Session, settings
) -> None:
    url = f"/sessions/{session.session_id}/runs/"
    writer = User.objects.create_user("writer")
    writer.user_permissions.add(Permission.objects.get(codename="write_sessions"))
    client = Client()
    client.force_login(writer)
    assert 'id="run-form"' not in client.get(f"/sessions/{session.session_id}/").content.decode()
    assert client.post(url, {"prompt": "hi", "mode": "plan"}).status_code == 403
    settings.ALLOW_RUNS = True
    assert client.post(url, {"prompt": "hi", "mode": "plan"}).status_code == 403
    runner = User.objects.create_user("runner")
    runner.user_permissions.add(Permission.objects.get(codename="run_agents"))
    client.force_login(runner)
    assert 'id="run-form"' in client.get(f"/sessions/{session.session_id}/").content.decode()
    # CSRF is checked on the form post, as for every write.
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(runner)
    assert strict.post(url, {"prompt": "hi", "mode": "plan"}).status_code == 403
    assert not Run.objects.exists()


def test_no_api_route_starts_a_run(client: Client, session: Session, token: str) -> None:
    for path in ("runs", "run"):
        response = client.post(
            f"/api/sessions/{session.session_id}/{path}",
            {"prompt": "hi"},
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert response.status_code == 404
    assert not Run.objects.exists()


def test_a_session_file_gone_from_disk_is_a_clear_refusal(
    client: Client, session: Session, settings
) -> None:
    settings.RUN_COMMANDS = {"claude": sys.executable}
    Path(session.path).unlink()
    response = client.post(
        f"/sessions/{session.session_id}/runs/",
        {"prompt": "hi", "mode": "plan"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code in (400, 409)
    assert session.path in response.content.decode()
    assert not Run.objects.exists()


def test_the_prompt_box_is_offered_only_where_the_sessions_folder_is(
    client: Client, session: Session
) -> None:
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert 'id="run-form"' in page and 'id="run-not-here"' not in page
    session.cwd = "/nowhere/at/all"
    session.save(update_fields=["cwd"])
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert 'id="run-form"' not in page and "/nowhere/at/all) is not on this machine" in page


def test_a_run_being_started_is_not_taken_for_gone(session: Session) -> None:
    starting = open_run(session)  # recorded, its process not there yet
    assert current_run(session) == starting
    assert Run.objects.get().state == "running"
    Run.objects.filter(pk=starting.pk).update(started_at=starting.started_at - timedelta(minutes=5))
    assert current_run(session) is None  # never got a process: ended


# A CLI that prints its event, then writes the record a moment later, then works for a
# long time printing nothing: what a tool call that runs for minutes looks like.
QUIET_AFTER_WRITING = """
import sys, time
print('{"type": "assistant"}', flush=True)
time.sleep(0.6)
with open(sys.argv[1], "ab") as f:
    f.write(sys.argv[2].encode() + b"\\n")
time.sleep(60)
"""


@pytest.mark.django_db(transaction=True)
def test_a_record_written_while_the_cli_prints_nothing_reaches_the_page(
    tmp_path: Path, session: Session
) -> None:
    turns = session.turn_count + 1
    line = orjson.dumps(
        user_record("one more prompt", sid=str(session.session_id), parent=session.leaf_uuid)
    ).decode()
    proc = subprocess.Popen(
        [sys.executable, "-c", QUIET_AFTER_WRITING, session.path, line],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    run = open_run(session, proc)
    stderr = (tmp_path / "stderr").open("w+b")
    follower = threading.Thread(target=follow, args=(run.pk, proc, stderr), daemon=True)
    follower.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            session.refresh_from_db()
            if session.turn_count == turns:
                break
            time.sleep(0.05)
        # Indexed while the CLI still runs: the page's live tail shows the new turn.
        assert session.turn_count == turns
        assert proc.poll() is None
    finally:
        proc.kill()
        follower.join(timeout=15)
    assert not follower.is_alive()
    assert Run.objects.get().ended_at is not None


# -- a long prompt in any script is accepted; a refused one keeps its text -------------

CJK_PROMPT = "".join(chr(0x4E00 + i % 20_000) for i in range(30_000))  # 3 bytes each in UTF-8


def test_a_long_cjk_prompt_under_the_character_limit_is_accepted(
    client: Client, session: Session, settings
) -> None:
    settings.RUN_COMMANDS = {"claude": "true"}  # a command that exists and ends at once
    # The form as htmx sends it: 30,000 characters are 270 KB form-encoded.
    body = urlencode({"prompt": CJK_PROMPT, "mode": "plan"})
    assert len(body) > 270_000
    response = client.post(
        f"/sessions/{session.session_id}/runs/",
        body,
        content_type="application/x-www-form-urlencoded",
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200, response.content.decode()[:500]
    assert Run.objects.get().prompt == CJK_PROMPT


def test_the_byte_limit_admits_the_longest_prompt_of_four_byte_characters(settings) -> None:
    from sessions_app.formats.running import PROMPT_LIMIT

    # Form-encoded, a 4-byte character is %XX%XX%XX%XX: 12 bytes.
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE >= PROMPT_LIMIT * 12


def test_a_byte_limit_too_small_for_the_prompt_limit_is_refused_at_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(BRANCHBOARD_DATA_DIR=str(tmp_path), BRANCHBOARD_MAX_BODY=str(256 * 1024))
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "BRANCHBOARD_MAX_BODY=262144" in done.stderr and "100,000" in done.stderr, done.stderr


def test_a_prompt_over_the_limit_is_refused_with_its_text_kept(
    client: Client, session: Session
) -> None:
    typed = "長" * 100_001
    response = client.post(
        f"/sessions/{session.session_id}/runs/",
        {"prompt": typed, "mode": "edits", "model": "opus"},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert response.status_code == 400 and "over 100,000 characters" in body
    # The panel comes back with the form as it was sent: the text, the mode, the model.
    assert f">{typed}</textarea>" in body
    assert 'value="edits" checked' in body and 'value="opus"' in body
    assert not Run.objects.exists()


def test_a_refusal_without_htmx_keeps_the_text_to_send_again(
    client: Client, session: Session
) -> None:
    response = client.post(
        f"/sessions/{session.session_id}/runs/", {"prompt": "   ", "mode": "plan"}
    )
    body = response.content.decode()
    assert response.status_code == 400 and "the prompt is empty" in body
    assert 'id="run-form"' in body and 'id="run-prompt"' in body


# -- Codex: `codex exec resume <id> --json`, its mode flags, its event stream ------------

CODEX_FIXTURES = Path(__file__).parent / "fixtures" / "cli" / "codex" / "sessions"
CODEX_THREE_TURNS = "01a21760-a9c0-7191-881d-5cbb883febdf"
# A stand-in for `codex exec resume`: it notes its arguments, appends the prompt and a
# reply to the rollout as codex 0.169 does, and prints codex's JSONL events; the prompt
# "fail" makes it append the prompt, print codex's error events and exit 1.
FAKE_CODEX = """\
import json, os, sys
args = sys.argv[1:]
open(os.environ["FAKE_CODEX_ARGV"], "w").write(json.dumps(args))
prompt = args[-1]
def line(payload, kind="response_item"):
    return json.dumps({"timestamp": "2026-11-26T12:00:00Z", "type": kind, "payload": payload})
def message(role, text):
    kind = "input_text" if role == "user" else "output_text"
    return line({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
print(json.dumps({"type": "thread.started", "thread_id": args[2]}), flush=True)
print(json.dumps({"type": "turn.started"}), flush=True)
with open(os.environ["FAKE_CODEX_FILE"], "a") as f:
    f.write(message("user", prompt) + "\\n")
    if prompt == "fail":
        f.flush()
        print(json.dumps({"type": "error", "message": "Reconnecting... 1/5"}), flush=True)
        failed = {"message": "unexpected status 401 Unauthorized"}
        print(json.dumps({"type": "turn.failed", "error": failed}), flush=True)
        sys.exit(1)
    f.write(message("assistant", "reply to: " + prompt) + "\\n")
item = {"id": "item_0", "type": "agent_message", "text": "reply to: " + prompt}
print(json.dumps({"type": "item.completed", "item": item}), flush=True)
print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 10}}), flush=True)
"""


@pytest.fixture
def codex_session(tmp_path: Path, settings, monkeypatch) -> Session:
    root = tmp_path / "sessions"
    shutil.copytree(CODEX_FIXTURES, root)
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    sessions_import(roots=[root])
    found = Session.objects.get(session_id=CODEX_THREE_TURNS)
    found.cwd = str(tmp_path)  # a folder that exists here
    found.save(update_fields=["cwd"])
    script = tmp_path / "codex"
    script.write_text(f"#!{sys.executable}\n{FAKE_CODEX}")
    script.chmod(0o755)
    settings.RUN_COMMANDS = {"codex": str(script)}
    settings.DATA_DIR = tmp_path / "data"  # failed runs' lines are kept there
    monkeypatch.setenv("FAKE_CODEX_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_CODEX_FILE", found.path)
    return found


def ended_run(deadline: float = 30) -> Run:
    """The one run, once its follower has recorded its end."""
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        run = Run.objects.get()
        if run.ended_at is not None:
            return run
        time.sleep(0.05)
    raise AssertionError(f"the run did not end within {deadline} s")


def test_codex_run_args_resume_by_id_with_the_modes_as_codexs_own_flags() -> None:
    plan = codex_run_args(session_id="S", prompt="-rf; rm x", mode="plan", model="gpt-5.5")
    assert plan[:5] == ["exec", "resume", "S", "--json", "--skip-git-repo-check"]
    assert plan[-2:] == ["--", "-rf; rm x"]  # one argument, never an option
    assert plan[plan.index("-m") + 1] == "gpt-5.5"
    assert 'sandbox_mode="read-only"' in plan and 'approval_policy="never"' in plan
    edits = codex_run_args(session_id="S", prompt="p", mode="edits", model="")
    assert 'sandbox_mode="workspace-write"' in edits and "-m" not in edits
    full = codex_run_args(session_id="S", prompt="p", mode="full", model="")
    assert "--dangerously-bypass-approvals-and-sandbox" in full
    assert not any("sandbox_mode" in arg for arg in full)
    shown = shown_command("codex", plan, "-rf; rm x")
    assert shown[-2:] == ["--", "<prompt, 9 characters>"] and shown[:3] == [
        "codex",
        "exec",
        "resume",
    ]


def test_each_clis_failure_and_retry_events_are_read() -> None:
    assert run_event({"type": "result", "is_error": True, "result": "quota"}) == RunEvent("quota")
    failed = {"type": "turn.failed", "error": {"message": "401 Unauthorized"}}
    assert run_event(failed) == RunEvent(failure="401 Unauthorized")
    retry = run_event({"type": "error", "message": "Reconnecting... 2/5"})
    assert retry is not None and not retry.failure and "Reconnecting... 2/5" in retry.note
    for quiet in ({"type": "thread.started"}, {"type": "item.completed"}, {"type": "result"}):
        assert run_event(quiet) is None


def test_a_codex_session_shows_codexs_resume_command(codex_session: Session) -> None:
    assert resume_command(codex_session).endswith(f"&& codex resume {CODEX_THREE_TURNS}")


@pytest.mark.django_db(transaction=True)
def test_a_codex_session_is_carried_on_from_the_page(
    client: Client, codex_session: Session, tmp_path: Path
) -> None:
    turns = codex_session.turn_count
    html = client.get(f"/sessions/{CODEX_THREE_TURNS}/").content.decode()
    assert 'id="run-panel"' in html and f"codex resume {CODEX_THREE_TURNS}" in html

    response = client.post(
        f"/sessions/{CODEX_THREE_TURNS}/runs/",
        {"prompt": "-next step", "mode": "edits", "model": "gpt-5.5"},
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200
    run = ended_run()
    assert run.state == Run.State.FINISHED and run.exit_status == 0, run.message
    argv = orjson.loads((tmp_path / "argv.json").read_bytes())
    assert argv == codex_run_args(
        session_id=CODEX_THREE_TURNS, prompt="-next step", mode="edits", model="gpt-5.5"
    )
    assert run.command[1:4] == ["exec", "resume", CODEX_THREE_TURNS]
    assert "-next step" not in run.command and "<prompt, 10 characters>" in run.command
    # The follower imports once more after it recorded the end.
    until = time.monotonic() + 15
    while Session.objects.get(session_id=CODEX_THREE_TURNS).turn_count == turns:
        assert time.monotonic() < until, "the new turn was not imported"
        time.sleep(0.05)
    assert Session.objects.get(session_id=CODEX_THREE_TURNS).turn_count == turns + 1
    assert "reply to: -next step" in client.get(f"/sessions/{CODEX_THREE_TURNS}/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_failed_codex_run_says_codexs_error_and_takes_its_lines_back(
    client: Client, codex_session: Session
) -> None:
    before = Path(codex_session.path).read_bytes()

    client.post(
        f"/sessions/{CODEX_THREE_TURNS}/runs/",
        {"prompt": "fail", "mode": "plan", "model": ""},
        HTTP_HX_REQUEST="true",
    )

    run = ended_run()
    assert run.state == Run.State.FAILED and run.exit_status == 1
    assert run.message.startswith("unexpected status 401 Unauthorized")
    assert "taken out and kept in" in run.message, run.message
    assert Path(codex_session.path).read_bytes() == before
