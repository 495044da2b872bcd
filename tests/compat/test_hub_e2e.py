"""A team hub end to end: two machines push to a hub on PostgreSQL under gunicorn, a fork
made on the hub comes back to its machine where the real `claude` resumes it, and a hub
killed in the middle of a push takes the rest of the file once it is back.

Every step is a process of its own. A machine is a HOME and a data folder (its own SQLite)
driven through `manage.py hub_login / push_sessions / pull_sessions`; the hub is gunicorn
over a PostgreSQL database made for this run and dropped after. Needs npm (the CLIs) and
PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth; BRANCHBOARD_E2E_PG names
another server): skipped without them.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bench.bench_fork import generate
from tests.compat.clis import project_dir_name, run_claude
from tests.compat.fake_model import FakeModel

pytestmark = pytest.mark.compat

ROOT = Path(__file__).resolve().parents[2]
PG = os.environ.get("BRANCHBOARD_E2E_PG", "postgres://postgres@127.0.0.1:5432")
BIG = 3 << 20  # the file the hub is killed in the middle of
PUSH_CHUNK = 128 << 10  # ... pushed in chunks this size: about twenty-five requests
PROMPTS = ["alpha one", "beta two"]
USERS = """
import json
from django.contrib.auth.models import Permission, User
from sessions_app.models import ApiToken
alice = User.objects.create_user("alice")
alice.user_permissions.add(
    *Permission.objects.filter(codename__in=["push_sessions", "write_sessions"])
)
print(json.dumps({m: ApiToken.issue(name=m, user=alice)[1] for m in ("laptop", "desktop")}))
"""


def _env(home: Path, data: Path, **more: str) -> dict[str, str]:
    """A process's whole environment: nothing inherited but PATH, so no DATABASE_URL of the
    test run's and no HOME of the user's reaches a machine or the hub."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "BRANCHBOARD_DATA_DIR": str(data),
        **more,
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def _manage(*args: str, env: dict[str, str], stdin: str | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"manage.py {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _started(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin + "\n")  # a line fits in the pipe; communicate() closes it
        proc.stdin.flush()
    return proc


def _finished(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"{proc.args}:\n{out}\n{err}"
    return out


def _pushed_bytes(output: str) -> int:
    found = re.search(r"pushed \d+ files?\b.*?: ([\d,]+) bytes", output)
    assert found, output
    return int(found.group(1).replace(",", ""))


@dataclass
class Machine:
    name: str  # its namespace on the hub is alice@<name>
    home: Path
    data: Path

    @property
    def namespace(self) -> str:
        return f"alice@{self.name}"

    @property
    def cwd(self) -> Path:
        return self.home / "project"

    @property
    def project(self) -> Path:
        """Where claude keeps the sessions run in `cwd`."""
        return self.home / ".claude" / "projects" / project_dir_name(self.cwd)

    def env(self) -> dict[str, str]:
        return _env(
            self.home,
            self.data,
            BRANCHBOARD_HUB_PROJECTS="*",
            BRANCHBOARD_HUB_PUSH_CHUNK=str(PUSH_CHUNK),
        )

    def manage(self, *args: str, stdin: str | None = None) -> str:
        return _manage(*args, env=self.env(), stdin=stdin)

    def start(self, *args: str, stdin: str | None = None) -> subprocess.Popen[str]:
        return _started(*args, env=self.env(), stdin=stdin)


class Hub:
    """gunicorn serving the hub; killed and started again by the test."""

    def __init__(self, home: Path, data: Path, database: str, token: str) -> None:
        self.data, self.token = data, token
        self.env = _env(
            home,
            data,
            DATABASE_URL=database,
            BRANCHBOARD_TEAM_MODE="1",
            BRANCHBOARD_ALLOWED_HOSTS="127.0.0.1",
            BRANCHBOARD_WORKERS="2",
        )
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / "gunicorn.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "gunicorn", "branchboard.wsgi"]
        command += ["--config", "deploy/gunicorn.conf.py", "--bind", f"127.0.0.1:{self.port}"]
        with self.log.open("ab") as log:
            # A process group of its own: the master and its workers are stopped together.
            self.proc = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.api("GET", "/api/hub/whoami?who=1")
                return
            except urllib.error.HTTPError:
                return  # it answers (a token not made yet: 401)
            except (urllib.error.URLError, ConnectionError):
                pass
            try:
                self.proc.wait(timeout=0.05)  # the pause between two tries
            except subprocess.TimeoutExpired:
                pass
            else:
                raise AssertionError(f"gunicorn exited: {self.log.read_text()[-3000:]}")
            assert time.monotonic() < deadline, self.log.read_text()[-3000:]

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc = None

    def api(self, method: str, path: str, body: dict | None = None) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def file(self, namespace: str, local: Path, machine: Machine) -> Path:
        """The hub's copy of a machine's file: the same path under the namespace's folder."""
        return self.data / "hub" / namespace / local.relative_to(machine.home)


@dataclass
class World:
    hub: Hub
    laptop: Machine
    desktop: Machine
    fm: FakeModel
    claude: Path
    session_id: str  # made on the laptop by claude; the desktop has a copy (the same id)
    database: str

    def sessions(self, session_id: str) -> list[tuple[str, str]]:
        """(namespace, path) of every row the hub's index has for a session id."""
        with psycopg.connect(self.database) as db:
            rows = db.execute(
                "SELECT namespace, path FROM sessions_app_session WHERE session_id = %s",
                (session_id,),
            ).fetchall()
        return sorted(rows)


def _server_or_skip() -> None:
    try:
        psycopg.connect(f"{PG}/postgres", connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"hub e2e: no PostgreSQL at {PG} ({exc})")


@pytest.fixture(scope="module")
def world(clis: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A hub on a fresh PostgreSQL database, two machines logged in to it, both pushed."""
    _server_or_skip()
    tmp = tmp_path_factory.mktemp("hub-e2e")
    name = f"branchboard_hub_e2e_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    database = f"{PG}/{name}"
    laptop, desktop = (Machine(m, tmp / m, tmp / f"{m}-data") for m in ("laptop", "desktop"))
    hub = Hub(tmp / "hub-home", tmp / "hub-data", database, token="")
    fm = FakeModel()
    try:
        fm.start()
        # The two migrations run while claude makes the laptop's session.
        migrations = [
            _started("migrate", "--no-input", "-v", "0", env=hub.env),
            laptop.start("migrate", "--no-input", "-v", "0"),
        ]
        laptop.cwd.mkdir(parents=True)
        first = run_claude(laptop.home, laptop.cwd, fm, [PROMPTS[0]], executable=clis["claude"])
        sid = first.session_id
        assert sid
        again = [PROMPTS[1], "--resume", sid]
        second = run_claude(laptop.home, laptop.cwd, fm, again, executable=clis["claude"])
        assert second.session_id == sid
        desktop.project.mkdir(parents=True)
        shutil.copyfile(laptop.project / f"{sid}.jsonl", desktop.project / f"{sid}.jsonl")
        for proc in migrations:
            _finished(proc)
        users = _started("shell", "-c", USERS, env=hub.env)
        hub.start()  # while the users are made
        tokens = json.loads(_finished(users).strip().splitlines()[-1])
        hub.token = tokens["laptop"]
        logins = [
            m.start(
                "hub_login", hub.url, "--machine", m.name, "--token-stdin", stdin=tokens[m.name]
            )
            for m in (laptop, desktop)
        ]
        for machine, login in zip((laptop, desktop), logins, strict=True):
            assert f"as {machine.namespace}" in _finished(login)
        for push in [m.start("push_sessions") for m in (laptop, desktop)]:
            _finished(push)
        yield World(hub, laptop, desktop, fm, clis["claude"], sid, database)
    finally:
        hub.kill()
        fm.stop()
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_both_machines_sessions_are_on_the_hub_byte_for_byte(world: World) -> None:
    sid = world.session_id
    for machine in (world.laptop, world.desktop):
        local = machine.project / f"{sid}.jsonl"
        assert world.hub.file(machine.namespace, local, machine).read_bytes() == local.read_bytes()
        shown = world.hub.api("GET", f"/api/sessions/{machine.namespace}/{sid}")
        assert shown["session_id"] == sid
        assert shown["path"] == str(world.hub.file(machine.namespace, local, machine))
        assert [t["prompt"] for t in shown["turn_list"]][:2] == PROMPTS
    # The same id from two machines: two sessions, one in each namespace's folder.
    rows = world.sessions(sid)
    assert [namespace for namespace, _ in rows] == ["alice@desktop", "alice@laptop"]
    assert rows[0][1] != rows[1][1]


def test_a_fork_made_on_the_hub_is_resumed_by_claude_on_its_machine_and_pushed_back(
    world: World,
) -> None:
    laptop, hub = world.laptop, world.hub
    forked = hub.api(
        "POST", f"/api/sessions/{laptop.namespace}/{world.session_id}/fork", {"turn": 1}
    )
    fork_id = forked["session_id"]
    on_hub = hub.data / "hub" / laptop.namespace / ".claude" / "projects" / laptop.project.name
    made = (on_hub / f"{fork_id}.jsonl").read_bytes()

    said = laptop.manage("pull_sessions")
    pulled = laptop.project / f"{fork_id}.jsonl"
    assert f"pulled: {pulled}" in said
    assert pulled.read_bytes() == made

    world.fm.clear()
    run = run_claude(
        laptop.home,
        laptop.cwd,
        world.fm,
        ["gamma three", "--resume", fork_id],
        executable=world.claude,
    )
    assert run.session_id == fork_id
    seen = [text for role, text in world.fm.main_requests()[0].conversation if role == "user"]
    assert seen == [PROMPTS[0], "gamma three"]  # the fork's history: turn 1, not turn 2
    assert not world.fm.egress_attempts
    grown = pulled.read_bytes()
    assert grown.startswith(made) and len(grown) > len(made)

    sent = _pushed_bytes(laptop.manage("push_sessions"))
    assert sent == len(grown) - len(made)  # the appended turn only
    assert (on_hub / f"{fork_id}.jsonl").read_bytes() == grown
    shown = hub.api("GET", f"/api/sessions/{laptop.namespace}/{fork_id}")
    assert [t["prompt"] for t in shown["turn_list"]] == [PROMPTS[0], "gamma three"]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _until_part_is_there(push: subprocess.Popen[str], staging: Path) -> None:
    """Wait until the hub holds the first bytes of the file the push sends."""
    deadline = time.monotonic() + 30
    while _size(staging) == 0:
        try:
            push.wait(timeout=0.002)  # the pause between two looks
        except subprocess.TimeoutExpired:
            pass
        else:
            raise AssertionError(f"the push ended before the hub was stopped: {push.stderr}")
        assert time.monotonic() < deadline, "the push never reached the hub"


def test_a_hub_killed_in_the_middle_of_a_push_ends_with_the_exact_bytes(world: World) -> None:
    desktop, hub = world.desktop, world.hub
    big, _ = generate(desktop.project, target_bytes=BIG)
    data = big.read_bytes()
    on_hub = hub.file(desktop.namespace, big, desktop)
    staging = on_hub.with_name(f".{on_hub.name}.push")

    push = desktop.start("push_sessions")
    _until_part_is_there(push, staging)
    hub.signal(signal.SIGSTOP)  # frozen: what it holds now is what it held when killed
    held = _size(staging)
    hub.kill()
    assert 0 < held < len(data)
    assert not on_hub.exists()
    _, err = push.communicate(timeout=60)
    assert push.returncode != 0 and "cannot reach the hub" in err

    hub.start()
    sent = _pushed_bytes(desktop.manage("push_sessions"))
    assert sent == len(data) - held  # continued from what the hub held
    assert on_hub.read_bytes() == data
    assert not staging.exists()
    assert [ns for ns, _ in world.sessions(big.stem)] == [desktop.namespace]
    shown = hub.api("GET", f"/api/sessions/{desktop.namespace}/{big.stem}")
    assert shown["session_id"] == big.stem
    # Pushed again: nothing goes, nothing doubles.
    assert _pushed_bytes(desktop.manage("push_sessions")) == 0
    assert len(world.sessions(big.stem)) == 1
