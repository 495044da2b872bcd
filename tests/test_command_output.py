"""Every management command prints text from elsewhere escaped: no control character reaches
the terminal.

A session's title, cwd, prompt and path, a file name under the roots and a hub's answer are
data. Printed raw, `ESC ]0;…BEL` sets the terminal's title, `ESC [2J` clears the screen and
OSC 52 writes the clipboard. Each command runs here on a session (or a file, a path, a hub)
that holds such sequences, and what it prints, errors included, holds none of them, only
their escaped form (`\\x1b`). `--json` output is JSON, already escaped.
"""

from __future__ import annotations

import io
import os
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session
from sessions_app.services.hub.client import Login, login_save
from sessions_app.services.importing import sessions_import
from sessions_app.terminal import shown

from .factories import assistant_record, jsonl, user_record

pytestmark = pytest.mark.django_db

TITLE = "\x1b]0;owned\x07\x1b[2Jtitle"
CWD = "/work/x\x1b]52;c;b3duZWQ=\x07y"
FOLDER = "-work-x\x1b[2J-y"  # a project folder whose name clears the screen
PROMPT = "first \x1b[2J prompt\nsecond line"
CONTROLS = ("\x1b", "\x07", "\x9b")


def _clean(text: str) -> None:
    """`text` holds no control character but line breaks, and says the escapes instead."""
    assert not any(c in text for c in CONTROLS), repr(text)
    assert "\\x1b" in text, repr(text)


def _run(*args: str) -> tuple[str, str, CommandError | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def _said(*args: str) -> str:
    """All a command said: its output, its errors and the message it ended with."""
    out, err, refused = _run(*args)
    return out + err + (str(refused) if refused else "")


def _hostile_session(root: Path, *, turns: int = 2) -> Path:
    sid = str(uuid.uuid4())
    records: list[dict[str, Any]] = []
    parent = None
    for n in range(turns):
        prompt = PROMPT if n == 0 else f"prompt {n + 1}"
        at = f"2026-01-01T00:{n:02d}:00.000Z"
        user = user_record(prompt, sid=sid, parent=parent, timestamp=at, cwd=CWD)
        answer = assistant_record(
            f"answer {n + 1}", sid=sid, parent=user["uuid"], timestamp=at, cwd=CWD
        )
        records += [user, answer]
        parent = answer["uuid"]
    records.append({"type": "custom-title", "customTitle": TITLE, "sessionId": sid})
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(jsonl(records))
    old = time.time() - 60  # idle, as the rewind guard wants
    os.utime(path, (old, old))
    return path


@pytest.fixture
def root(tmp_path: Path, settings, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Claude Code's folder in a home of the test's own, the only session root."""
    projects = tmp_path / "home" / ".claude" / "projects"
    projects.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    settings.SESSION_ROOTS = [projects]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    return projects


@pytest.fixture
def hostile(root: Path) -> Session:
    path = _hostile_session(root)
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    session = Session.objects.get(path=str(path))
    assert session.cwd == CWD  # the index keeps the text as it was; printing escapes it
    return session


def test_shown_escapes_every_control_character_and_keeps_lines_when_asked() -> None:
    assert shown("a\x1b]0;t\x07b\r\n\x9b") == "a\\x1b]0;t\\x07b\\r\\n\\x9b"
    assert shown("a\x1b[2J\n\tb\r", lines=True) == "a\\x1b[2J\n\tb\\r"
    assert shown("plain: ü, 字, 🙂") == "plain: ü, 字, 🙂"


def test_fork_session_prints_the_path_and_resume_command_escaped(hostile: Session) -> None:
    _clean(_said("fork_session", str(hostile.session_id)))


def test_fork_session_before_a_turn_prints_the_prompt_escaped(hostile: Session) -> None:
    said = _said("fork_session", str(hostile.session_id), "--turn", "2", "--before")
    _clean(said)
    assert "\\x1b[2J prompt" not in said  # turn 2's prompt is printed, not turn 1's
    said = _said("fork_session", str(hostile.session_id), "--turn", "1", "--before")
    _clean(said)
    assert "first \\x1b[2J prompt\nsecond line" in said  # its lines kept


def test_fork_session_with_a_hostile_title_prints_it_escaped(hostile: Session) -> None:
    _clean(_said("fork_session", str(hostile.session_id), "--title", TITLE))


def test_fork_session_refusal_is_escaped(hostile: Session, root: Path) -> None:
    for asked in (
        (str(hostile.session_id), "--turn", "9\x1b[2J"),
        (str(root / FOLDER / "missing.jsonl"),),
    ):
        out, err, refused = _run("fork_session", *asked)
        assert refused is not None
        _clean(out + err + str(refused))


def test_rewind_session_and_its_undo_print_escaped(hostile: Session) -> None:
    _clean(_said("rewind_session", str(hostile.session_id), "--turn", "2"))
    _clean(_said("rewind_session", str(hostile.session_id), "--undo"))


def test_restore_session_prints_the_paths_escaped(hostile: Session, root: Path) -> None:
    Path(hostile.path).unlink()
    sessions_import(roots=[root])  # the file is gone: the session is kept, archived
    said = _said("restore_session", str(hostile.session_id))
    _clean(said)
    assert Path(hostile.path).exists()


def test_import_sessions_prints_paths_escaped(root: Path) -> None:
    first = _hostile_session(root)
    twin = root / "-work-twin" / first.name  # the same session id in a second folder
    twin.parent.mkdir()
    twin.write_bytes(first.read_bytes())
    said = _said("import_sessions", "--root", str(root), "--no-progress")
    assert "already imported" in said
    _clean(said)


def test_worktree_remove_refusal_is_escaped(tmp_path: Path, root: Path) -> None:
    folder = tmp_path / "repo\x1b[2J"
    folder.mkdir()
    out, err, refused = _run("worktree_remove", str(folder))
    assert refused is not None
    _clean(out + err + str(refused))


def test_create_api_token_refusal_is_escaped(root: Path) -> None:
    out, err, refused = _run("create_api_token", "--user", "mallory\x1b[2J")
    assert refused is not None
    _clean(out + err + str(refused))


def test_push_sessions_dry_run_prints_paths_escaped(hostile: Session, settings) -> None:
    settings.HUB_PROJECTS = ["*"]
    login_save(Login("http://127.0.0.1:9", "alice@laptop", "token"))
    said = _said("push_sessions", "--dry-run")
    assert "would push" in said
    _clean(said)


class _LyingHub:
    """A hub on loopback that says the token belongs to a user named with escapes."""

    user = "alice\x1b]0;owned\x07"

    def __init__(self) -> None:
        said = self.user

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = orjson.dumps({"user": said, "namespace": "x"})
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture
def lying_hub() -> Iterator[_LyingHub]:
    hub = _LyingHub()
    yield hub
    hub.server.shutdown()
    hub.server.server_close()


def test_hub_login_prints_the_hubs_answer_escaped(
    root: Path, lying_hub: _LyingHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a-token\n"))
    said = _said("hub_login", lying_hub.url, "--token-stdin", "--machine", "laptop")
    _clean(said)


def test_import_sessions_watch_log_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`import_sessions --watch` says what went wrong through its log: the file and the
    terminal get the message escaped, as every command's output."""
    from sessions_app.management.commands.import_sessions import _log_to_file, logger

    kept = (logger.handlers[:], logger.level, logger.propagate)
    try:
        log = _log_to_file(tmp_path / "import.log")
        logger.warning("%s: cannot read; skipped", f"/roots/{FOLDER}/x.jsonl")
        for handler in logger.handlers:
            handler.flush()
        _clean(log.read_text())
        _clean(capsys.readouterr().err)
    finally:
        for handler in logger.handlers:
            handler.close()
        logger.handlers[:], logger.level, logger.propagate = kept
