"""`pull_sessions` against a hub that lies: a fake hub on loopback answers the pull API
(`pulls`, `file`, `pulled`) as told, and the machine must write only new, checked files,
only inside its roots, never over a session it knows, and print nothing raw."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import ApiToken, Session
from sessions_app.services.archive import archive_bytes
from sessions_app.services.hub.client import Login, login_save
from sessions_app.services.importing import sessions_import

from .corpus import FIXTURES, make_idle

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.django_db(transaction=True)

PROJECT = "-home-dev-code-webapp"
SESSION = "d62afd75-12b1-4077-921c-1fa1eda79364"
REPO = Path(__file__).resolve().parent.parent


class FakeHub:
    """A hub on loopback that offers `files` (hub path: bytes) and records what it is told."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.pulls_body: bytes | None = None  # a `pulls` answer of the test's own
        # ... or one made as it is sent (with its Content-Length, or none), its bytes counted
        self.pulls_blocks: tuple[Callable[[], Iterator[bytes]], int | None] | None = None
        self.pulls_sent = 0
        self.pulls_status = 200
        self.announced: dict[str, int] = {}  # a size other than the bytes'
        self.sent: dict[str, bytes] = {}  # a `file` body other than the bytes, compressed
        self.acknowledged: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: bytes | Iterator[bytes]) -> None:
                self.send_response(status)
                if isinstance(body, bytes):
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_header("Connection", "close")
                self.end_headers()
                for block in body:
                    self.wfile.write(block)

            def _count(self, blocks: Callable[[], Iterator[bytes]], size: int | None) -> None:
                self.send_response(200)
                if size is None:
                    self.send_header("Connection", "close")
                else:
                    self.send_header("Content-Length", str(size))
                self.end_headers()
                try:
                    for block in blocks():
                        self.wfile.write(block)
                        hub.pulls_sent += len(block)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading

            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                if url.path == "/api/hub/pulls":
                    if hub.pulls_blocks is not None:
                        return self._count(*hub.pulls_blocks)
                    if hub.pulls_body is not None:
                        return self._answer(hub.pulls_status, hub.pulls_body)
                    files = [
                        {
                            "path": path,
                            "session_id": "x",
                            "size": hub.announced.get(path, len(data)),
                            "sha256": hashlib.sha256(data).hexdigest(),
                        }
                        for path, data in hub.files.items()
                    ]
                    return self._answer(200, orjson.dumps({"files": files}))
                if url.path == "/api/hub/file":
                    path = query["path"]
                    if path in hub.sent:
                        return self._answer(200, hub.sent[path])
                    return self._answer(200, zstd.compress(hub.files[path]))
                self._answer(404, b'{"error": "no such endpoint"}')

            def do_POST(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if url.path == "/api/hub/pulled":
                    hub.acknowledged.append(query["path"])
                    return self._answer(200, b'{"ok": true}')
                self._answer(404, b'{"error": "no such endpoint"}')

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_hub() -> Iterator[FakeHub]:
    hub = FakeHub()
    yield hub
    hub.close()


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings, fake_hub: FakeHub) -> Path:
    """A laptop's home, logged in to the fake hub: its Claude root, the only one."""
    home = tmp_path / "laptop"
    projects = home / ".claude" / "projects"
    projects.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    settings.SESSION_ROOTS = [projects]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    login_save(Login(fake_hub.url, "alice@laptop", "token"))
    return projects


def _line(text: str, session: str = SESSION) -> bytes:
    record = {
        "type": "user",
        "uuid": hashlib.md5(text.encode()).hexdigest(),
        "parentUuid": None,
        "sessionId": session,
        "timestamp": "2026-01-02T03:04:05.000Z",
        "cwd": "/home/dev/code/webapp",
        "message": {"role": "user", "content": text},
    }
    return orjson.dumps(record) + b"\n"


def _pull() -> tuple[str, str, CommandError | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("pull_sessions", stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def _removed_session(projects: Path) -> tuple[Path, Session, bytes]:
    """A session imported, its file deleted (a CLI's cleanup), imported again: the archive
    holds its only copy."""
    folder = projects / PROJECT
    shutil.copytree(FIXTURES / "cli" / "claude" / PROJECT, folder)
    make_idle(projects)
    path = folder / f"{SESSION}.jsonl"
    data = path.read_bytes()
    sessions_import(roots=[projects])
    path.unlink()
    sessions_import(roots=[projects])
    session = Session.objects.get(path=str(path))
    assert session.file_removed_at is not None
    assert archive_bytes(session) == data
    return path, session, data


# 1 ---------------------------------------------------------------------------------------


def test_a_pull_never_writes_where_a_removed_session_was(machine: Path, fake_hub: FakeHub) -> None:
    path, session, data = _removed_session(machine)
    fake_hub.files[f".claude/projects/{PROJECT}/{SESSION}.jsonl"] = _line("from the hub")
    _, err, refused = _pull()
    assert refused is not None
    assert "indexed" in err and "nothing written" in err
    assert not os.path.lexists(path)
    assert fake_hub.acknowledged == []
    sessions_import(roots=[machine])
    kept = Session.objects.get(pk=session.pk)
    assert kept.file_removed_at is not None
    assert archive_bytes(kept) == data


def test_a_file_that_appears_where_a_removed_session_was_is_not_imported_over_it(
    machine: Path,
) -> None:
    path, session, data = _removed_session(machine)
    path.write_bytes(_line("a new file at the old path"))
    report = sessions_import(roots=[machine])
    assert any("is not imported" in e and SESSION in e for e in report.errors)
    kept = Session.objects.get(pk=session.pk)
    assert kept.file_removed_at is not None  # still the removed session, not the new file
    assert kept.bytes_imported == len(data)
    assert archive_bytes(kept) == data
    again = sessions_import(roots=[machine])  # said again while the file is there
    assert any("is not imported" in e for e in again.errors)
    assert archive_bytes(Session.objects.get(pk=session.pk)) == data


def test_a_removed_session_whose_own_bytes_come_back_is_back(machine: Path) -> None:
    path, session, data = _removed_session(machine)
    path.write_bytes(data)
    report = sessions_import(roots=[machine])
    assert not report.errors
    assert Session.objects.get(pk=session.pk).file_removed_at is None


# 4 ---------------------------------------------------------------------------------------


def test_a_file_bigger_than_the_cap_is_refused_before_it_is_fetched(
    machine: Path, fake_hub: FakeHub, settings
) -> None:
    settings.HUB_MAX_PULL = 1000
    hub_path = f".claude/projects/{PROJECT}/{SESSION}.jsonl"
    fake_hub.files[hub_path] = _line("x" * 2000)
    _, err, refused = _pull()
    assert refused is not None and "BRANCHBOARD_HUB_MAX_PULL" in err
    assert not (machine / PROJECT / f"{SESSION}.jsonl").exists()


def test_a_hub_that_sends_more_than_it_announced_is_cut_off(
    machine: Path, fake_hub: FakeHub
) -> None:
    hub_path = f".claude/projects/{PROJECT}/{SESSION}.jsonl"
    small = _line("small")
    fake_hub.files[hub_path] = small
    fake_hub.sent[hub_path] = zstd.compress(small * 100_000)  # 20 MB behind a 200-byte promise
    _, err, refused = _pull()
    assert refused is not None and "more bytes came than" in err
    assert list((machine / PROJECT).iterdir()) == []  # no file, no temporary file


def test_a_pulled_file_streams_in_and_is_written_byte_for_byte(
    machine: Path, fake_hub: FakeHub
) -> None:
    hub_path = f".claude/projects/{PROJECT}/{SESSION}.jsonl"
    data = b"".join(_line(f"turn {n} " + "y" * 500) for n in range(20_000))  # 10 MB
    fake_hub.files[hub_path] = data
    out, _, refused = _pull()
    assert refused is None, out
    assert (machine / PROJECT / f"{SESSION}.jsonl").read_bytes() == data
    assert Session.objects.get(session_id=SESSION).line_count == 20_000
    assert fake_hub.acknowledged == [hub_path]


# 6 ---------------------------------------------------------------------------------------


def test_a_pull_follows_no_linked_folder_out_of_the_roots(
    machine: Path, fake_hub: FakeHub, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (machine / "-evil-link").symlink_to(elsewhere)
    fake_hub.files[f".claude/projects/-evil-link/{SESSION}.jsonl"] = _line("out")
    _, err, refused = _pull()
    assert refused is not None and "outside the session roots" in err
    assert list(elsewhere.iterdir()) == []


def test_a_pull_writes_nothing_into_a_root_that_is_not_configured(
    machine: Path, fake_hub: FakeHub, settings, tmp_path: Path
) -> None:
    settings.SESSION_ROOTS = [tmp_path / "other"]
    fake_hub.files[f".claude/projects/{PROJECT}/{SESSION}.jsonl"] = _line("x")
    _, err, refused = _pull()
    assert refused is not None and "configured session roots" in err
    assert not (machine / PROJECT).exists()


# 9 ---------------------------------------------------------------------------------------


def test_a_hubs_control_characters_never_reach_the_terminal(
    machine: Path, fake_hub: FakeHub
) -> None:
    trick = "\x1b]0;owned\x07\r\x1b[2K0 pulled, all good"
    fake_hub.pulls_status = 403
    fake_hub.pulls_body = orjson.dumps({"error": trick})
    _, _, refused = _pull()
    assert refused is not None
    said = str(refused)
    assert "\x1b" not in said and "\x07" not in said and "\r" not in said
    assert "\\x1b]0;owned\\x07" in said


def test_a_path_with_control_characters_is_printed_escaped(
    machine: Path, fake_hub: FakeHub
) -> None:
    fake_hub.files[f".claude/projects/{PROJECT}/\x1b[2K{SESSION}.jsonl"] = _line("x")
    out, err, refused = _pull()
    assert refused is not None
    assert "\x1b" not in out + err
    assert "\\x1b[2K" in err


# 10 --------------------------------------------------------------------------------------


def test_a_line_holding_a_carriage_return_is_refused(machine: Path, fake_hub: FakeHub) -> None:
    one, two = _line("one").rstrip(b"\n"), _line("two")
    fake_hub.files[f".claude/projects/{PROJECT}/{SESSION}.jsonl"] = one + b"\r" + two
    _, err, refused = _pull()
    assert refused is not None and "line 1 holds a carriage return" in err
    assert list((machine / PROJECT).iterdir()) == []


@pytest.mark.parametrize(
    "answer",
    [
        b"<html>not a hub</html>",
        b'{"files": 3}',
        b'{"nothing": []}',
        b'{"files": [{"path": 1, "size": 2, "sha256": "x"}]}',
        b'{"files": [{"path": "a", "size": "big", "sha256": "x"}]}',
        b'{"files": [{"path": "a"}]}',
        b"[]",
    ],
)
def test_a_malformed_pulls_answer_is_a_clear_error(
    machine: Path, fake_hub: FakeHub, answer: bytes
) -> None:
    fake_hub.pulls_body = answer
    _, _, refused = _pull()
    assert refused is not None
    assert "malformed" in str(refused) or "not JSON" in str(refused)


# 18 --------------------------------------------------------------------------------------


def test_a_file_already_here_with_the_hubs_bytes_is_imported_and_acknowledged(
    machine: Path, fake_hub: FakeHub
) -> None:
    hub_path = f".claude/projects/{PROJECT}/{SESSION}.jsonl"
    data = _line("one") + _line("two")
    fake_hub.files[hub_path] = data
    (machine / PROJECT).mkdir()
    (machine / PROJECT / f"{SESSION}.jsonl").write_bytes(data)  # a pull that crashed after
    out, _, refused = _pull()
    assert refused is None and "1 already here" in out
    assert Session.objects.get(session_id=SESSION).line_count == 2
    assert fake_hub.acknowledged == [hub_path]


@pytest.mark.parametrize("command", [["pull_sessions"], ["push_sessions", "--watch"]])
def test_a_fresh_machine_sets_up_its_database(
    tmp_path: Path, fake_hub: FakeHub, command: list[str]
) -> None:
    """Set up as the README's "On each machine" says: no migrate; the command makes its tables."""
    home = tmp_path / "fresh"
    (home / ".claude" / "projects").mkdir(parents=True)
    data_dir = tmp_path / "fresh-data"
    data_dir.mkdir(mode=0o700)
    (data_dir / "hub.json").write_bytes(
        orjson.dumps({"url": fake_hub.url, "namespace": "alice@fresh", "token": "t"})
    )
    (data_dir / "hub.json").chmod(0o600)
    hub_path = f".claude/projects/{PROJECT}/{SESSION}.jsonl"
    fake_hub.files[hub_path] = _line("a fork made on the hub")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CLAUDE_CONFIG_DIR")}
    env.update(HOME=str(home), BRANCHBOARD_DATA_DIR=str(data_dir), BRANCHBOARD_HUB_PROJECTS="*")
    env.pop("BRANCHBOARD_ROOTS", None)
    if command[0] == "pull_sessions":
        done = subprocess.run(
            [sys.executable, str(REPO / "manage.py"), *command],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "1 pulled" in done.stdout
    else:
        # The watch pulls at its first tick: run it until the hub is told, then stop it.
        process = subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), *command],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = 120.0
            started = time.monotonic()
            while not fake_hub.acknowledged and time.monotonic() - started < deadline:
                if process.poll() is not None:
                    break
                time.sleep(0.1)
        finally:
            process.terminate()
            _out, err = process.communicate(timeout=30)
        assert "OperationalError" not in err, err
    assert fake_hub.acknowledged == [hub_path]
    written = home / ".claude" / "projects" / PROJECT / f"{SESSION}.jsonl"
    assert written.read_bytes() == fake_hub.files[hub_path]
    listed = subprocess.run(
        [
            sys.executable,
            str(REPO / "manage.py"),
            "shell",
            "-c",
            "from sessions_app.models import Session;"
            "print(list(Session.objects.values_list('session_id', flat=True)))",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert SESSION in listed.stdout, listed.stderr


# 20 --------------------------------------------------------------------------------------


def test_one_session_id_in_two_project_folders_is_said_once_in_plain_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings, live_server
) -> None:
    home = tmp_path / "laptop"
    projects = home / ".claude" / "projects"
    for project in ("-home-dev-a", "-home-dev-b"):
        (projects / project).mkdir(parents=True)
        (projects / project / f"{SESSION}.jsonl").write_bytes(_line(f"in {project}"))
    make_idle(projects)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    settings.SESSION_ROOTS = [projects]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.HUB_PROJECTS = ["*"]
    settings.HUB_EXCLUDE = []
    user = User.objects.create_user("alice", password="x")
    user.user_permissions.add(Permission.objects.get(codename="push_sessions"))
    _, key = ApiToken.issue(name="laptop", user=user)
    login_save(Login(live_server.url, "alice@laptop", key))
    for _ in range(2):
        out, err = io.StringIO(), io.StringIO()
        call_command("push_sessions", stdout=out, stderr=err)
        said = out.getvalue() + err.getvalue()
        assert said.count(f"session {SESSION} is in 2 project folders") == 1, said
        assert "not imported" not in said and "not pushed" not in said, said
    assert json.dumps(said)  # printed, not raised


# Bounds: what a hub's answers can make the client spend -------------------------------


def _refused_entries(count: int) -> Iterator[bytes]:
    """A `pulls` answer of `count` files whose paths this machine refuses (no CLI's folder)."""
    yield b'{"files": ['
    for n in range(count):
        entry = {"path": f"nowhere/{n}-{'x' * 100}.jsonl", "size": 1, "sha256": "0"}
        yield (b"," if n else b"") + orjson.dumps(entry)
    yield b"]}"


@pytest.mark.parametrize("length_said", [True, False])
def test_a_pulls_answer_past_the_cap_is_refused_and_not_read_on(
    machine: Path, fake_hub: FakeHub, length_said: bool
) -> None:
    count = 400_000  # about 60 MB of JSON
    size = sum(len(b) for b in _refused_entries(count)) if length_said else None
    fake_hub.pulls_blocks = (lambda: _refused_entries(count), size)
    out, err, refused = _pull()
    assert refused is not None and "answer to pulls" in str(refused) and "over the" in str(refused)
    assert len((out + err).splitlines()) < 10, "the answer's entries were printed"
    assert list(machine.iterdir()) == []
    # The client stopped reading: the hub could not send it all (socket buffers aside).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and fake_hub.pulls_sent < 20 << 20 and length_said is False:
        time.sleep(0.05)  # the server's thread notices the closed connection
    assert fake_hub.pulls_sent < 40 << 20


def test_every_list_a_pull_prints_is_capped(machine: Path, fake_hub: FakeHub) -> None:
    fake_hub.pulls_blocks = (lambda: _refused_entries(2000), None)
    out, err, refused = _pull()
    assert refused is not None
    lines = err.splitlines()
    assert len(lines) <= 52, len(lines)
    assert "… and 1950 more" in err
    assert "2000 not pulled" in out


def test_a_file_body_longer_than_its_size_needs_is_cut_off(
    machine: Path, fake_hub: FakeHub
) -> None:
    """Empty zstd blocks decompress to nothing: a hub could send them for ever."""
    hub_path = f".claude/projects/{PROJECT}/{SESSION}.jsonl"
    data = _line("small")
    fake_hub.files[hub_path] = data
    header = (0xFD2FB528).to_bytes(4, "little") + bytes([0, 0])  # a frame, no size said
    last = ((len(data) << 3) | 1).to_bytes(3, "little") + data  # the last block, raw
    fake_hub.sent[hub_path] = header + b"\x00\x00\x00" * 400_000 + last  # 1.2 MB of nothing
    _, _, refused = _pull()
    assert refused is not None and "answer to file" in str(refused) and "over the" in str(refused)
    assert list((machine / PROJECT).iterdir()) == []
    assert fake_hub.acknowledged == []


# The peak RSS of this process (VmHWM: ru_maxrss would keep the parent's from the fork).
RECEIVE = """
import re, sys
import django
django.setup()
from sessions_app.services.hub.pulling import _receive
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1]) << 10
packed, size, sha256 = open(sys.argv[1], "rb").read(), int(sys.argv[2]), sys.argv[3]
base = peak()
with open(sys.argv[4], "wb") as out:
    _receive([packed[i : i + (1 << 20)] for i in range(0, len(packed), 1 << 20)], out, size, sha256)
print((peak() - base) / size)
"""


def test_a_long_line_is_checked_where_it_lies_not_copied(tmp_path: Path) -> None:
    """A line spanning blocks is held once while it is checked: the pull's memory is the
    line and what its JSON check makes of it (orjson: twice the line), not a copy more
    (a peak RSS, in a process of its own: the line is 48 MB; 4 times it before)."""
    line = _line("z" * (48 << 20))
    (tmp_path / "line.zst").write_bytes(zstd.compress(line))
    env = {**os.environ, "BRANCHBOARD_DATA_DIR": str(tmp_path / "data")}
    env.setdefault("DJANGO_SETTINGS_MODULE", "branchboard.settings")
    (tmp_path / "data").mkdir(mode=0o700)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            RECEIVE,
            str(tmp_path / "line.zst"),
            str(len(line)),
            hashlib.sha256(line).hexdigest(),
            str(tmp_path / "out.jsonl"),
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.jsonl").read_bytes() == line
    times = float(done.stdout.split()[-1])
    assert times < 3.5, f"the pull held {times:.1f} times the line"
