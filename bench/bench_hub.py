"""Benchmark: a team hub on loopback, under gunicorn on PostgreSQL (issue 31's figures).

In one run, with a hub served by gunicorn (deploy/gunicorn.conf.py, team mode) on a
fresh PostgreSQL database, and machines whose HOME holds generated sessions
(bench/corpus.py's long session):

1. a cold push of a `--session-mb` session: `manage.py push_sessions` as a subprocess,
   timed until the hub holds the file stored and verified (its committed file appears:
   the SHA-256 of the whole was checked before the rename) and until the command ends
   (the hub indexes the file inside the commit); next to `cp` + `sync` of the same file
   (median of 3, same run). The indexing share (command end less stored) is set beside
   a local `sessions_import` of the same file into its own fresh PostgreSQL database
   (what `import_sessions` runs before its search and usage catch-up);
2. one appended line reaching the hub with `push_sessions --watch` running: from the
   append to `/api/sessions/<ns>/<id>` showing it as the last turn (`--samples`, median);
3. `--machines` simulated machines (one namespace each, threads of one child process
   speaking the real protocol: state, then an append chunk with its proof) pushing
   appends, paced (one append per machine per second) and then flat out, while this
   process fetches the project list and a session page: page p95 against the idle
   hub's (same run), and pushes per second;
4. peak RSS of `push_sessions` and of the hub's gunicorn workers (VmHWM, reset before
   each push) during the `--session-mb` push and the `--small-mb` one;
5. a cold push of a corpus of many real-sized files (`--corpus-mb`, bench/corpus.py's
   copies of the fixture sessions, a few hundred files of 0.1 KB-3 MB): `push_sessions`
   until it ends, next to `cp -r` + `sync` of the same folder and the hub's own
   `import_sessions` of those files into a fresh PostgreSQL database (same run).

    .venv/bin/python bench/bench_hub.py [--session-mb 300] [--small-mb 30] [--machines 100]
        [--seconds 20] [--samples 7] [--live-mb 3] [--corpus-mb 57] [--quick] [--keep]
    [--parts push,append,machines,corpus]

The databases (helperbench_hub_<pid>, helperbench_local_<pid>) are created next to
postgres://postgres@127.0.0.1:5432/postgres (or --pg-url) and dropped at the end. A
last line `BENCH_JSON {...}` carries the summary rows for bench/run_all.py.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from contextlib import ExitStack
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_fork import cp_sync  # noqa: E402 (needs the path above)
from bench.corpus import fresh_database, long_session, replicated_corpus  # noqa: E402

MB = 1_000_000
PYTHON = sys.executable
MANAGE = [PYTHON, str(ROOT / "manage.py")]
GUNICORN = str(Path(PYTHON).with_name("gunicorn"))
PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"
USER = "bench"
# Variables of the CLIs that would point a machine elsewhere than its HOME.
MACHINE_UNSET = (
    "DATABASE_URL",
    "BRANCHBOARD_ROOTS",
    "CLAUDE_CONFIG_DIR",
    "QWEN_HOME",
    "CODEX_HOME",
)

SETUP = """
import json, django
django.setup()
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Permission, User
from django.contrib.sessions.backends.db import SessionStore
from sessions_app.models import ApiToken
user = User.objects.create_user("bench", password="x")
for codename in ("push_sessions", "write_sessions"):
    user.user_permissions.add(Permission.objects.get(codename=codename))
_, key = ApiToken.issue(name="bench", user=user)
store = SessionStore()
store[SESSION_KEY] = str(user.pk)
store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
store[HASH_SESSION_KEY] = user.get_session_auth_hash()
store.create()
print(json.dumps({"token": key, "cookie": store.session_key}))
"""


# ---------------------------------------------------------------- the hub


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HubServer:
    """gunicorn serving the app in team mode on the hub's database and data folder."""

    def __init__(self, env: dict[str, str], work: Path, name: str = "hub") -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(
            env,
            HOME=str(work / "hub-home"),
            BRANCHBOARD_TEAM_MODE="1",
            BRANCHBOARD_BIND=f"127.0.0.1:{self.port}",
            BRANCHBOARD_ACCESS_LOG=str(work / f"{name}-access.log"),
            # The access log names each request's time on the hub (microseconds).
            GUNICORN_CMD_ARGS="--access-logformat '%(m)s %(U)s %(s)s %(D)s'",
        )
        self.access_log = work / f"{name}-access.log"
        for name in ("BRANCHBOARD_ROOTS", "CLAUDE_CONFIG_DIR", "QWEN_HOME", "CODEX_HOME"):
            self.env.pop(name, None)
        (work / "hub-home").mkdir(exist_ok=True)
        self.log = (work / f"{name}-gunicorn.log").open("ab")
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [GUNICORN, "-c", "deploy/gunicorn.conf.py", "branchboard.wsgi"],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"gunicorn exited {self.proc.returncode}; see its log")
            try:
                urllib.request.urlopen(self.url + "/accounts/login/", timeout=2).read()
                workers = int(self.env.get("BRANCHBOARD_WORKERS", os.cpu_count() * 2 + 1))
                if len(self.workers()) >= workers:
                    return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise SystemExit("the hub did not answer within 60 s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def workers(self) -> list[int]:
        assert self.proc is not None
        pid = self.proc.pid
        try:
            return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            return []

    def reset_peaks(self) -> None:
        """Start each worker's VmHWM (peak RSS) over from its present RSS."""
        for pid in self.workers():
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")

    def worker_peak_mb(self) -> float:
        """The largest peak RSS of a worker since the last reset, in MB."""
        peaks = [0.0]
        for pid in self.workers():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peaks.append(int(line.split()[1]) / 1024)
            except OSError:
                pass
        return max(peaks)


def get(url: str, *, token: str = "", cookie: str = "", timeout: float = 30) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if cookie:
        request.add_header("Cookie", f"sessionid={cookie}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


# ---------------------------------------------------------------- a machine


class Machine:
    """A HOME holding one generated session, with its own data folder logged in to the hub."""

    def __init__(self, work: Path, name: str, mb: float, hub: HubServer, token: str) -> None:
        self.name = name
        self.namespace = f"{USER}@{name}"
        self.home = work / f"home-{name}"
        self.project = f"-work-bench-{name}"
        folder = self.home / ".claude" / "projects" / self.project
        self.session_id = str(uuid.uuid4())
        self.path, self.lines = long_session(
            folder, target_bytes=int(mb * MB), session_id=self.session_id
        )
        old = time.time() - 60
        os.utime(self.path, (old, old))
        self.mb = self.path.stat().st_size / MB
        self.data = work / f"data-{name}"
        self.data.mkdir(mode=0o700)
        self.env = dict(
            os.environ,
            HOME=str(self.home),
            BRANCHBOARD_DATA_DIR=str(self.data),
            BRANCHBOARD_HUB_PROJECTS="*",
            DJANGO_SETTINGS_MODULE="branchboard.settings",
        )
        for name_ in MACHINE_UNSET:
            self.env.pop(name_, None)
        self.hub_file = (
            Path(hub.env["BRANCHBOARD_DATA_DIR"])
            / "hub"
            / self.namespace
            / ".claude"
            / "projects"
            / self.project
            / self.path.name
        )
        done = subprocess.run(
            [*MANAGE, "hub_login", hub.url, "--user", USER, "--machine", name, "--token-stdin"],
            input=token + "\n",
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise SystemExit(f"hub_login failed: {done.stderr[-2000:]}")

    def last_uuid(self) -> str:
        with self.path.open("rb") as f:
            f.seek(max(0, self.path.stat().st_size - (1 << 20)))
            last = f.read().splitlines()[-1]
        return orjson.loads(last)["uuid"]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def push_cold(machine: Machine, hub: HubServer) -> dict[str, float]:
    """`push_sessions` of the machine's one session to a hub that holds none of it."""
    stored: list[float] = []

    def watch_for_file(stop: threading.Event) -> None:
        while not stop.is_set():
            if machine.hub_file.exists():
                stored.append(time.perf_counter())
                return
            time.sleep(0.002)

    stop = threading.Event()
    watcher = threading.Thread(target=watch_for_file, args=(stop,), daemon=True)
    hub.reset_peaks()
    logged = hub.access_log.stat().st_size if hub.access_log.exists() else 0
    watcher.start()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*MANAGE, "push_sessions"],
        env=machine.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    out = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.perf_counter()
    stop.set()
    watcher.join()
    if os.waitstatus_to_exitcode(status) or not stored:
        raise SystemExit(f"push_sessions failed:\n{out[-3000:]}")
    if sha256_of(machine.hub_file) != sha256_of(machine.path):
        raise SystemExit("the hub's file is not the machine's")
    spent: dict[str, float] = {}
    with hub.access_log.open() as f:
        f.seek(logged)
        for line in f:
            words = line.split()
            if len(words) == 4 and words[1].startswith("/api/hub/"):
                what = words[1].rsplit("/", 1)[-1]
                spent[what] = spent.get(what, 0.0) + int(words[3]) / 1e6
    return {
        "hub_chunks": spent.get("chunk", 0.0),
        "hub_commit": spent.get("commit", 0.0),
        "hub_state": spent.get("state", 0.0),
        "stored": stored[0] - start,
        "total": end - start,
        "indexing": end - stored[0],
        "push_rss": usage.ru_maxrss / 1024,
        "worker_rss": hub.worker_peak_mb(),
    }


def push_again(machine: Machine) -> float:
    """`push_sessions` with nothing to send: the command's own cost (start-up, state)."""
    start = time.perf_counter()
    subprocess.run(
        [*MANAGE, "push_sessions"], env=machine.env, cwd=ROOT, check=True, capture_output=True
    )
    return time.perf_counter() - start


def local_import(machine: Machine, env: dict[str, str]) -> tuple[float, float]:
    """`sessions_import` of the same file into a local database: (seconds, peak RSS MB)."""
    child = dict(env, HOME=str(machine.home))
    for name in ("BRANCHBOARD_ROOTS", "CLAUDE_CONFIG_DIR"):
        child.pop(name, None)
    done = subprocess.run(
        [PYTHON, __file__, "--child-import", str(machine.path)],
        env=child,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"the local import failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["seconds"], result["rss"]


def child_import(path: Path) -> None:
    import resource

    import django

    django.setup()
    from sessions_app.services.importing import sessions_import
    from sessions_app.services.watching import CATCH_UP

    root = path.parent.parent
    start = time.perf_counter()
    report = sessions_import(roots=[root], paths=[path])
    # What the hub does on receipt, as import_sessions does: records, then search and usage.
    for _, refresh in CATCH_UP:
        refresh(session_ids=report.session_pks)
    seconds = time.perf_counter() - start
    if report.errors:
        raise SystemExit("; ".join(report.errors[:3]))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rss": rss}))


# ---------------------------------------------------------------- one line appended


def append_prompt(machine: Machine, parent: str, marker: str) -> str:
    new = str(uuid.uuid4())
    record = {
        "type": "user",
        "uuid": new,
        "parentUuid": parent,
        "sessionId": machine.session_id,
        "timestamp": time.strftime("2030-01-01T%H:%M:%S.000Z", time.gmtime()),
        "cwd": "/work/bench",
        "isSidechain": False,
        "userType": "external",
        "message": {"role": "user", "content": marker},
    }
    with machine.path.open("ab") as f:
        f.write(orjson.dumps(record) + b"\n")
    return new


def last_prompt(hub: HubServer, machine: Machine, token: str) -> str | None:
    status, body = get(
        f"{hub.url}/api/sessions/{machine.namespace}/{machine.session_id}", token=token
    )
    if status != 200:
        return None
    turns = orjson.loads(body).get("turn_list") or []
    return turns[-1]["prompt"] if turns else None


def append_latency(machine: Machine, hub: HubServer, token: str, samples: int, work: Path):
    """Seconds from an append to the hub's API showing it, with `push_sessions --watch`."""
    log = (work / "watch.log").open("w+b")
    proc = subprocess.Popen(
        [*MANAGE, "push_sessions", "--watch"],
        env=dict(machine.env, PYTHONUNBUFFERED="1"),
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while b"watching" not in (work / "watch.log").read_bytes():
            if time.monotonic() > deadline or proc.poll() is not None:
                said = (work / "watch.log").read_bytes().decode(errors="replace")[-3000:]
                raise SystemExit(f"push_sessions --watch did not start watching:\n{said}")
            time.sleep(0.05)
        time.sleep(1.0)
        parent = machine.last_uuid()
        latencies, gets = [], []
        for n in range(samples):
            marker = f"bench marker {n} {uuid.uuid4()}"
            start = time.perf_counter()
            parent = append_prompt(machine, parent, marker)
            while True:
                asked = time.perf_counter()
                said = last_prompt(hub, machine, token)
                gets.append(time.perf_counter() - asked)
                if said == marker:
                    latencies.append(time.perf_counter() - start)
                    break
                if time.perf_counter() - start > 30:
                    raise SystemExit(f"the append did not reach the hub in 30 s (said {said!r})")
                time.sleep(0.02)
            time.sleep(1.0)  # a new debounce window for the next sample
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return latencies, statistics.median(gets)


# ---------------------------------------------------------------- many machines


def child_machines(url: str, token: str, machines: int, seconds: float) -> None:
    """`machines` threads, each a machine pushing appends of its own session (namespace
    bench@mNNN): set-up (the file whole, staged, committed), then a paced phase (one
    append a second each), then a flat-out phase. Prints START/END lines per phase."""
    import django

    django.setup()
    from sessions_app.services.hub.client import Hub, Login
    from sessions_app.services.hub.proofs import HEAD_PROOF, TAIL_PROOF
    from sessions_app.services.hub.proofs import proofs as file_proofs

    if sys.version_info >= (3, 14):
        from compression import zstd
    else:
        from backports import zstd

    import io

    def proofs(data: bytes):
        return file_proofs(io.BytesIO(data), len(data))

    assert HEAD_PROOF and TAIL_PROOF

    class One:
        def __init__(self, n: int) -> None:
            self.hub = Hub(Login(url, f"{USER}@m{n:03d}", token))
            self.sid = str(uuid.uuid4())
            self.path = f".claude/projects/-work-m{n:03d}/{self.sid}.jsonl"
            self.parent: str | None = None
            self.data = b"".join(self.line(f"first prompt of machine {n}") for _ in range(20))
            self.pushes = 0
            self.errors: list[str] = []
            self.times: list[float] = []

        def line(self, text: str) -> bytes:
            new = str(uuid.uuid4())
            record = {
                "type": "user",
                "uuid": new,
                "parentUuid": self.parent,
                "sessionId": self.sid,
                "timestamp": "2030-01-01T00:00:00.000Z",
                "cwd": "/work/bench",
                "isSidechain": False,
                "message": {"role": "user", "content": text},
            }
            self.parent = new
            return orjson.dumps(record) + b"\n"

        def chunk(self, block: bytes, offset: int, staged: bool) -> None:
            proof = proofs(self.data[:offset])
            params = {
                "path": self.path,
                "offset": offset,
                "length": len(block),
                "sha256": hashlib.sha256(block).hexdigest(),
                "head": proof.head,
                "tail": proof.tail,
                "staged": "1" if staged else "0",
            }
            packed = zstd.compress(block, level=3)
            self.hub.json("POST", "chunk", params, body=packed, content_type="application/zstd")

        def setup(self) -> None:
            self.chunk(self.data, 0, True)
            whole = hashlib.sha256(self.data).hexdigest()
            self.hub.json(
                "POST",
                "commit",
                {"path": self.path, "size": len(self.data), "sha256": whole},
                body=b"",
            )

        def append(self) -> None:
            start = time.perf_counter()
            state = self.hub.json("POST", "state", body=orjson.dumps({"paths": [self.path]}))
            held = state["files"][self.path]["size"]
            block = self.line(f"prompt at {time.time()}")
            assert held == len(self.data)
            self.chunk(block, held, False)
            self.data += block
            self.pushes += 1
            self.times.append(time.perf_counter() - start)

    ones = [One(n) for n in range(machines)]
    first = ones[0]

    def run_all(target, phase_end: float | None = None, interval: float = 0.0) -> None:
        def loop(one: One, offset: float) -> None:
            try:
                if phase_end is None:
                    target(one)
                    return
                time.sleep(offset)
                next_at = time.monotonic()
                while time.monotonic() < phase_end:
                    target(one)
                    if interval:
                        next_at += interval
                        time.sleep(max(0.0, next_at - time.monotonic()))
            except Exception as exc:  # a refusal or a timeout: counted, the machine stops
                one.errors.append(f"{type(exc).__name__}: {exc}")

        threads = [
            threading.Thread(target=loop, args=(one, interval * i / machines))
            for i, one in enumerate(ones)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    start = time.perf_counter()
    run_all(One.setup)
    errors = [e for one in ones for e in one.errors]
    print(
        json.dumps(
            {
                "setup": time.perf_counter() - start,
                "errors": errors[:5],
                "session": f"{USER}@m000/{first.sid}",
            }
        ),
        flush=True,
    )
    if errors:
        raise SystemExit(1)
    sys.stdin.readline()  # the parent has measured the idle hub's pages
    for phase, interval in (("paced", 1.0), ("flat", 0.0)):
        for one in ones:
            one.pushes, one.times = 0, []
        print(f"START {phase}", flush=True)
        begin = time.monotonic()
        run_all(One.append, phase_end=begin + seconds, interval=interval)
        spent = time.monotonic() - begin
        times = sorted(t for one in ones for t in one.times)
        pushes = sum(one.pushes for one in ones)
        print(
            f"END {phase} "
            + json.dumps(
                {
                    "pushes": pushes,
                    "seconds": spent,
                    "per_second": pushes / spent,
                    "push_p50": times[len(times) // 2] if times else None,
                    "push_p95": times[int(len(times) * 0.95)] if times else None,
                    "errors": [e for one in ones for e in one.errors][:5],
                }
            ),
            flush=True,
        )


def p95(values: list[float]) -> float:
    ordered = sorted(values) or [float("nan")]
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def many_machines(
    hub: HubServer, token: str, cookie: str, machines: int, seconds: float, push_url: str = ""
):
    """Pages under pushes from `machines` machines; idle pages first (the baseline).
    `push_url`: where the machines push (the hub's push pool), if not the pages' server."""
    proc = subprocess.Popen(
        [
            PYTHON,
            __file__,
            "--child-machines",
            push_url or hub.url,
            token,
            str(machines),
            str(seconds),
        ],
        env=dict(hub.env, PYTHONUNBUFFERED="1"),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    setup = json.loads(proc.stdout.readline())
    if setup["errors"]:
        raise SystemExit(f"machines' set-up failed: {setup['errors']}")
    pages = {"project list": "/", "session page": f"/sessions/{setup['session']}/"}
    for what, path in pages.items():
        status, _ = get(hub.url + path, cookie=cookie)
        if status != 200:
            raise SystemExit(f"{what} {path}: {status}")
    # Every worker thread's first pages (templates, a connection) are not what is measured.
    warm = threading.Thread(
        target=lambda: [get(hub.url + p, cookie=cookie) for p in pages.values() for _ in range(20)]
    )
    warm.start()
    for _ in range(20):
        for path in pages.values():
            get(hub.url + path, cookie=cookie)
    warm.join()
    phase: list[str | None] = ["idle"]
    samples: dict[str, list[float]] = {}
    failed: dict[str, list[object]] = {}
    stop = threading.Event()

    def fetch() -> None:
        while not stop.is_set():
            for path in pages.values():
                now = phase[0]
                start = time.perf_counter()
                try:
                    status, _ = get(hub.url + path, cookie=cookie)
                except OSError as exc:
                    status = type(exc).__name__
                spent = time.perf_counter() - start
                if now is not None and phase[0] == now:
                    if status == 200:
                        samples.setdefault(now, []).append(spent)
                    else:
                        failed.setdefault(now, []).append(status)

    fetcher = threading.Thread(target=fetch, daemon=True)
    fetcher.start()
    time.sleep(min(seconds, 10))
    phase[0] = None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    results = {}
    for line in proc.stdout:
        if line.startswith("START "):
            phase[0] = line.split()[1]
        elif line.startswith("END "):
            _, name, data = line.split(" ", 2)
            phase[0] = None
            results[name] = json.loads(data)
    stop.set()
    fetcher.join()
    if proc.wait():
        raise SystemExit("the machines' process failed")
    for name, statuses in failed.items():
        print(f"{name}: {len(statuses)} pages not answered 200: {sorted(set(map(str, statuses)))}")
    return samples, results, setup["setup"]


# ---------------------------------------------------------------- the run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session-mb", type=float, default=300, help="the large push")
    parser.add_argument("--small-mb", type=float, default=30, help="the small push (memory)")
    parser.add_argument("--live-mb", type=float, default=3, help="the session appended to")
    parser.add_argument("--samples", type=int, default=7, help="appends timed with --watch")
    parser.add_argument("--corpus-mb", type=float, default=57, help="the corpus of many files")
    parser.add_argument("--machines", type=int, default=100, help="simulated machines")
    parser.add_argument("--seconds", type=float, default=20, help="seconds of each load phase")
    parser.add_argument("--quick", action="store_true", help="small sizes (run_all's quick run)")
    parser.add_argument("--pg-url", default=PG_URL, help="a PostgreSQL database to start from")
    parser.add_argument("--tmpdir", default=None, help="where the work folder goes")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--parts",
        default="push,append,machines,corpus",
        help="which of push,append,machines,corpus to run",
    )
    args = parser.parse_args()
    if args.quick:
        args.session_mb, args.small_mb, args.live_mb = 30, 3, 1
        args.samples, args.machines, args.seconds = 3, 20, 5
        args.corpus_mb = 10
    work = Path(tempfile.mkdtemp(prefix="helperbench-hub-", dir=args.tmpdir))
    tag = os.getpid()
    rows: list[list[str]] = []
    try:
        with ExitStack() as stack:
            hub_data = work / "hub-data"
            hub_data.mkdir(mode=0o700)
            hub_env = stack.enter_context(
                fresh_database("postgres", hub_data, args.pg_url, f"helperbench_hub_{tag}")
            )
            local_data = work / "local-data"
            local_data.mkdir(mode=0o700)
            local_env = stack.enter_context(
                fresh_database("postgres", local_data, args.pg_url, f"helperbench_local_{tag}")
            )
            for env in (hub_env, local_env):
                subprocess.run([*MANAGE, "migrate", "-v", "0"], env=env, cwd=ROOT, check=True)
            made = subprocess.run(
                [PYTHON, "-c", SETUP],
                env=hub_env,
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            )
            creds = json.loads(made.stdout.strip().splitlines()[-1])
            token, cookie = creds["token"], creds["cookie"]
            hub = HubServer(hub_env, work)
            hub.start()
            stack.callback(hub.stop)
            print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            print(
                f"hub: gunicorn (deploy/gunicorn.conf.py, {len(hub.workers())} workers) "
                f"on PostgreSQL at {hub.url}; work folder {work}",
                flush=True,
            )
            parts = set(args.parts.split(","))
            if "push" in parts:
                rows += run_pushes(args, work, hub, token, local_env)
            if "append" in parts:
                rows += run_append(args, work, hub, token)
            if "corpus" in parts:
                rows += run_corpus(args, work, hub, token, tag)
            if "machines" in parts:
                rows += run_machines(args, hub, token, cookie)
                # The deployment's push pool: 3 workers of their own at nice 10.
                pool = HubServer(
                    dict(hub_env, BRANCHBOARD_WORKERS="3", BRANCHBOARD_NICE="10"), work, "pool"
                )
                pool.start()
                stack.callback(pool.stop)
                rows += run_machines(args, hub, token, cookie, pool)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    head = ("what", "figure", "same-run baseline", "ratio", "target")
    table = [head, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    print("\nhub summary")
    for i, r in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("BENCH_JSON " + json.dumps({"hub_rows": rows}))


def run_pushes(args, work: Path, hub: HubServer, token: str, local_env) -> list[list[str]]:
    rows = []
    results = {}
    for size in (args.small_mb, args.session_mb):
        name = f"push{size:g}"
        machine = Machine(work, name, size, hub, token)
        bases = [cp_sync(machine.path, work)]
        pushed = push_cold(machine, hub)
        bases += [cp_sync(machine.path, work), cp_sync(machine.path, work)]
        base = statistics.median(bases)
        again = push_again(machine)
        local_s, local_rss = local_import(machine, local_env)
        results[size] = pushed
        print(
            f"push {machine.mb:.0f} MB ({machine.lines} lines): stored+verified "
            f"{pushed['stored']:.2f} s, push_sessions end {pushed['total']:.2f} s (indexing "
            f"{pushed['indexing']:.2f} s); cp+sync {base:.3f} s (runs "
            f"{', '.join(f'{b:.3f}' for b in bases)}); nothing-to-send run {again:.2f} s; "
            f"local import (records, search, usage) {local_s:.2f} s; peak RSS push_sessions "
            f"{pushed['push_rss']:.0f} MB, hub worker {pushed['worker_rss']:.0f} MB, "
            f"local import {local_rss:.0f} MB",
            flush=True,
        )
        print(
            f"  on the hub (access log): state {pushed['hub_state']:.2f} s, chunks "
            f"{pushed['hub_chunks']:.2f} s, commit (verify + index) {pushed['hub_commit']:.2f} s; "
            f"the rest of the stored time on the machine (start-up, read, digest, compress, "
            f"send): {pushed['stored'] - pushed['hub_state'] - pushed['hub_chunks']:.2f} s",
            flush=True,
        )
        mb = f"{machine.mb:.0f} MB"
        if size == args.session_mb:
            rows.append(
                [
                    f"push {mb} cold: stored + verified on the hub",
                    f"{pushed['stored']:.2f} s",
                    f"cp+sync {base:.3f} s",
                    f"{pushed['stored'] / base:.1f}x",
                    "<= 3x",
                ]
            )
            rows.append(
                [
                    f"push {mb} cold: push_sessions end to end (with indexing)",
                    f"{pushed['total']:.2f} s",
                    f"cp+sync {base:.3f} s",
                    f"{pushed['total'] / base:.1f}x",
                    "",
                ]
            )
            rows.append(
                [
                    "  the hub's indexing share of it",
                    f"{pushed['indexing']:.2f} s",
                    f"local import (records, search, usage) {local_s:.2f} s",
                    f"{pushed['indexing'] / local_s:.2f}x",
                    "~1x",
                ]
            )
            rows.append(
                [
                    "  push_sessions with nothing to send (start-up, state)",
                    f"{again:.2f} s",
                    "",
                    "",
                    "",
                ]
            )
    small, big = results[args.small_mb], results[args.session_mb]
    rows.append(
        [
            f"peak RSS push_sessions, {args.session_mb:g} MB push",
            f"{big['push_rss']:.0f} MB",
            f"{args.small_mb:g} MB push {small['push_rss']:.0f} MB",
            f"{big['push_rss'] / small['push_rss']:.2f}x",
            "flat",
        ]
    )
    rows.append(
        [
            f"peak RSS hub worker, {args.session_mb:g} MB push",
            f"{big['worker_rss']:.0f} MB",
            f"{args.small_mb:g} MB push {small['worker_rss']:.0f} MB",
            f"{big['worker_rss'] / small['worker_rss']:.2f}x",
            "flat",
        ]
    )
    return rows


def cp_r_sync(folder: Path, scratch: Path) -> float:
    """The baseline: `cp -r` of the folder, then `sync` of the copy's files (fsync)."""
    target = scratch / "cp-r-baseline"
    start = time.perf_counter()
    subprocess.run(["cp", "-r", str(folder), str(target)], check=True)
    files = [str(p) for p in target.rglob("*") if p.is_file()]
    subprocess.run(["sync", *files], check=True)
    spent = time.perf_counter() - start
    shutil.rmtree(target)
    return spent


def run_corpus(args, work: Path, hub: HubServer, token: str, tag: int) -> list[list[str]]:
    """A cold push of many real-sized files beside `cp -r` + `sync` and the hub's own import."""
    machine = Machine(work, "corpus", 0.001, hub, token)
    projects = machine.home / ".claude" / "projects"
    machine.path.unlink()  # only the corpus: its sizes are the real ones
    machine.path.parent.rmdir()
    files, written = replicated_corpus(projects, target_bytes=int(args.corpus_mb * MB))
    old = time.time() - 60
    for path in projects.rglob("*.jsonl"):
        os.utime(path, (old, old))
    bases = [cp_r_sync(projects, work)]
    logged = hub.access_log.stat().st_size if hub.access_log.exists() else 0
    start = time.perf_counter()
    done = subprocess.run(
        [*MANAGE, "push_sessions"], env=machine.env, cwd=ROOT, capture_output=True, text=True
    )
    pushed = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"push_sessions failed:\n{(done.stdout + done.stderr)[-3000:]}")
    held = (
        Path(hub.env["BRANCHBOARD_DATA_DIR"]) / "hub" / machine.namespace / ".claude" / "projects"
    )
    sent = sorted(p.relative_to(projects) for p in projects.rglob("*.jsonl"))
    got = sorted(p.relative_to(held) for p in held.rglob("*.jsonl"))
    if sent != got or any(sha256_of(projects / p) != sha256_of(held / p) for p in sent):
        raise SystemExit("the hub's files are not the machine's")
    calls: dict[str, list[float]] = {}
    with hub.access_log.open() as f:
        f.seek(logged)
        for line in f:
            words = line.split()
            if len(words) == 4 and words[1].startswith("/api/hub/"):
                calls.setdefault(words[1].rsplit("/", 1)[-1], []).append(int(words[3]) / 1e6)
    bases += [cp_r_sync(projects, work), cp_r_sync(projects, work)]
    base = statistics.median(bases)
    data = work / "corpus-import"
    data.mkdir(mode=0o700)
    with fresh_database("postgres", data, args.pg_url, f"helperbench_corpus_{tag}") as env:
        subprocess.run([*MANAGE, "migrate", "-v", "0"], env=env, cwd=ROOT, check=True)
        env = dict(env, HOME=str(machine.home))
        for name in MACHINE_UNSET[1:]:
            env.pop(name, None)
        start = time.perf_counter()
        subprocess.run(
            [*MANAGE, "import_sessions", "--no-progress", "--root", str(projects)],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        imported = time.perf_counter() - start
    mb = written / MB
    on_hub = ", ".join(
        f"{what} {len(spent)} requests {sum(spent):.2f} s" for what, spent in sorted(calls.items())
    )
    print(
        f"corpus push: {files} files, {mb:.1f} MB: push_sessions {pushed:.2f} s; cp -r + sync "
        f"{base:.3f} s (runs {', '.join(f'{b:.3f}' for b in bases)}); the hub's own "
        f"import_sessions of them {imported:.2f} s\n  on the hub (access log): {on_hub}",
        flush=True,
    )
    label = f"corpus push cold: {files} files, {mb:.0f} MB, push_sessions end to end"
    return [
        [label, f"{pushed:.2f} s", f"cp -r + sync {base:.3f} s", f"{pushed / base:.0f}x", ""],
        [
            "  the same push against the hub's own import of those files",
            f"{pushed:.2f} s",
            f"import_sessions {imported:.2f} s",
            f"{pushed / imported:.2f}x",
            "<= 2x",
        ],
    ]


def run_append(args, work: Path, hub: HubServer, token: str) -> list[list[str]]:
    machine = Machine(work, "live", args.live_mb, hub, token)
    push_cold(machine, hub)
    latencies, one_get = append_latency(machine, hub, token, args.samples, work)
    print(
        f"append -> hub API ({machine.mb:.1f} MB session, push_sessions --watch): "
        + ", ".join(f"{s:.2f}" for s in latencies)
        + " s",
        flush=True,
    )
    median = statistics.median(latencies)
    return [
        [
            f"one line appended -> hub's API shows it (--watch, median of {len(latencies)})",
            f"{median:.2f} s (max {max(latencies):.2f})",
            f"one API GET {one_get * 1000:.0f} ms; watch debounce 0.30 s",
            "",
            "< 2 s",
        ]
    ]


def run_machines(
    args, hub: HubServer, token: str, cookie: str, pool: HubServer | None = None
) -> list[list[str]]:
    """The machines push to the pages' own server, or with `pool` to the hub's push pool
    (deploy/branchboard-hub.service: workers of its own, at nice 10)."""
    push_url = pool.url if pool is not None else ""
    where = "to the push pool" if pool is not None else "to the pages' server"
    samples, results, setup = many_machines(
        hub, token, cookie, args.machines, args.seconds, push_url
    )
    idle = samples.get("idle", [])
    rows = []
    print(
        f"{args.machines} machines pushing {where}, set up (a file each, committed) in "
        f"{setup:.1f} s; idle pages: {len(idle)} fetched, p95 {p95(idle) * 1000:.1f} ms",
        flush=True,
    )
    for phase, label in (("paced", f"1 append/s each, {where}"), ("flat", f"flat out, {where}")):
        got = samples.get(phase, [])
        r = results.get(phase, {})
        print(
            f"{phase}: {r.get('pushes')} pushes in {r.get('seconds', 0):.1f} s "
            f"({r.get('per_second', 0):.1f}/s), push p50 {(r.get('push_p50') or 0) * 1000:.0f}"
            f" ms p95 {(r.get('push_p95') or 0) * 1000:.0f} ms, errors {r.get('errors')}; "
            f"pages: {len(got)} fetched, p50 {statistics.median(got or [0]) * 1000:.1f} ms, "
            f"p95 {p95(got) * 1000:.1f} ms",
            flush=True,
        )
        rows.append(
            [
                f"pages p95 under {args.machines} machines pushing ({label})",
                f"{p95(got) * 1000:.1f} ms",
                f"idle hub {p95(idle) * 1000:.1f} ms",
                f"{p95(got) / p95(idle):.1f}x",
                "< 100 ms",
            ]
        )
        rows.append(
            [
                f"  pushes per second ({label}; one push = state + append chunk)",
                f"{r['per_second']:.1f}/s",
                f"push p95 {r['push_p95'] * 1000:.0f} ms",
                "",
                "reported",
            ]
        )
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child-import":
        child_import(Path(sys.argv[2]))
    elif len(sys.argv) > 2 and sys.argv[1] == "--child-machines":
        child_machines(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    else:
        main()
