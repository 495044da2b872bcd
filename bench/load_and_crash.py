"""Load and crash test of a team-style server: gunicorn, 2 workers, PostgreSQL.

Loopback only, bounded in time (about 90 s with the default 60 s of load):

1. serves the transcript and sessions pages to `wrk` for `--seconds` and reports
   requests/s, median and p99 latency, and errors (must be 0);
2. during that load, fires 20 fork requests at one session at the same moment
   through the JSON API: each succeeds or is refused with a guard message, all
   titles differ, every new file is complete, parses, and has mode 0600;
3. kills -9 the worker that is writing a fork of a large session, then checks
   that no partial file sits under a final name, that the database and the disk
   agree after a re-import, that gunicorn replaced the worker, and that the next
   fork works.

    .venv/bin/python bench/load_and_crash.py [--seconds 60] [--keep]

Needs PostgreSQL on 127.0.0.1:5432 (trust auth) and wrk (apt-get install wrk).
Exits non-zero when a check fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import long_session  # noqa: E402 (needs the path above)
from tests.reading import analyse_file  # noqa: E402

PY = sys.executable
TRANSCRIPT = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"  # 30 turns with a Bash call each
FORKED = "d62afd75-12b1-4077-921c-1fa1eda79364"
checks: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    checks.append((name, ok, detail))


def manage(env: dict, *args: str) -> str:
    result = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    if result.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)}: {result.stderr}")
    return result.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(
    url: str, *, token: str | None = None, body: dict | None = None, timeout: float = 120
) -> tuple[int, dict]:
    data = orjson.dumps(body) if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return status, {"raw": raw[:200].decode(errors="replace")}


def wait_until(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"gave up waiting for {what}")


def workers_of(master: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def holder_of(path_part: str, pids: list[int]) -> int | None:
    """The pid among `pids` with an open file whose name contains `path_part`."""
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if path_part in os.readlink(f"/proc/{pid}/fd/{fd}"):
                        return pid
                except OSError:
                    continue
        except OSError:
            continue
    return None


def file_complete(path: Path, turns: int | None = None) -> bool:
    lines = path.read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    title = records[-1]
    if title.get("type") != "custom-title":
        return False
    if (os.stat(path).st_mode & 0o777) != 0o600:
        return False
    return turns is None or analyse_file(path)[1].turn_count == turns


def run_wrk(base: str, paths: list[str], seconds: int, token: str) -> dict:
    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    quoted = ", ".join(f'"{p}"' for p in paths)
    script.write_text(
        f"local paths = {{{quoted}}}\nlocal i = 0\n"
        "request = function()\n  i = i + 1\n  return wrk.format('GET', paths[(i % #paths) + 1])\nend\n"
    )
    result = subprocess.run(
        [
            "wrk",
            "-t2",
            "-c16",
            f"-d{seconds}s",
            "--timeout",
            "10s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",  # a local dashboard answers its owner only
            "-s",
            str(script),
            base,
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    out = result.stdout
    script.unlink()

    def ms(label: str) -> float:
        match = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)", out, re.M)
        if not match:
            return float("nan")
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),
        "p50": ms("50"),
        "p99": ms("99"),
        "errors": (int(non2xx.group(1)) if non2xx else 0)
        + (sum(map(int, socket_errors.groups())) if socket_errors else 0),
        "raw": out,
    }


def concurrent_forks(api: str, token: str, count: int) -> list[tuple[int, dict]]:
    barrier = threading.Barrier(count)
    results: list[tuple[int, dict]] = []
    lock = threading.Lock()

    def one(n: int) -> None:
        barrier.wait()
        result = request(f"{api}/sessions/{FORKED}/fork", token=token, body={"turn": 1 + n % 3})
        with lock:
            results.append(result)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument(
        "--big-mb",
        type=int,
        default=200,
        help="size of the session forked when the worker is killed",
    )
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bb-load-"))
    database = f"bb_load_{os.getpid()}"
    admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True)
    admin.execute(f'CREATE DATABASE "{database}"')
    server = None
    try:
        roots = []
        for name in ("cli/claude", "public/claude"):
            shutil.copytree(ROOT / "tests/fixtures" / name, work / name)
            roots.append(work / name)
        big_path, _ = long_session(
            work / "cli/claude/-work-big", target_bytes=args.big_mb * 1_000_000
        )
        old = time.time() - 60
        for path in work.rglob("*.jsonl"):
            os.utime(path, (old, old))
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
        env.update(
            DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{database}",
            BRANCHBOARD_DATA_DIR=str(work / "data"),
            BRANCHBOARD_ROOTS=":".join(map(str, roots)),
            BRANCHBOARD_BUSY_SECONDS="0",
            BRANCHBOARD_WORKERS="2",
            BRANCHBOARD_ACCESS_LOG=str(work / "access.log"),
        )
        manage(env, "migrate", "-v", "0")
        manage(env, "import_sessions", "--no-progress")
        token = manage(env, "create_api_token", "--name", "load").strip()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [
                PY,
                "-m",
                "gunicorn",
                "branchboard.wsgi",
                "-c",
                "deploy/gunicorn.conf.py",
                "--bind",
                f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(work / "gunicorn.log", "wb"),  # noqa: SIM115 (closed with the process)
        )
        wait_until(
            lambda: request(f"{base}/", token=token, timeout=2)[0] == 200 if _up(port) else False,
            30,
            "gunicorn",
        )
        status, body = request(f"{base}/api/sessions/{TRANSCRIPT}", token=token)
        project = re.search(
            r'href="/projects/(\d+)/"',
            urllib.request.urlopen(
                urllib.request.Request(f"{base}/", headers={"Authorization": f"Bearer {token}"})
            )
            .read()
            .decode(),
        )
        paths = [f"/sessions/{TRANSCRIPT}/", f"/projects/{project.group(1)}/"]

        # 1 + 2: load, and 20 forks at once in the middle of it
        load: dict = {}
        loader = threading.Thread(
            target=lambda: load.update(run_wrk(base, paths, args.seconds, token))
        )
        loader.start()
        time.sleep(min(5, args.seconds / 3))  # let the load reach its steady state first
        forks = concurrent_forks(f"{base}/api", token, 20)
        loader.join(timeout=args.seconds + 120)
        ok = [b for s, b in forks if s == 201]
        refused = [(s, b) for s, b in forks if s != 201]
        titles = [b["title"] for b in ok]
        check(
            "load: no errors",
            load.get("errors", 1) == 0,
            f"{load.get('errors')} errors in {load.get('requests')} requests",
        )
        check(
            "forks: each 201 or a guard message",
            all(400 <= s < 500 and "error" in b for s, b in refused),
            str(refused[:3]),
        )
        check("forks: titles distinct", len(set(titles)) == len(titles), f"{len(titles)} titles")
        check(
            "forks: files complete, 0600, right turns",
            all(file_complete(Path(b["path"]), b["turns"]) for b in ok),
            f"{len(ok)} files",
        )

        # 3: kill -9 the worker writing a fork of the big session
        big_id = big_path.stem
        folder = big_path.parent
        before = {p.name for p in folder.iterdir()}
        outcome: dict = {}
        crasher = threading.Thread(
            target=lambda: outcome.update(
                result=_try(request, f"{base}/api/sessions/{big_id}/fork", token=token, body={})
            )
        )
        crasher.start()
        temp = wait_until(
            lambda: next(iter(folder.glob(".*.tmp")), None), 60, "the fork's temp file"
        )
        victim = wait_until(
            lambda: holder_of(temp.name, workers_of(server.pid)), 30, "the worker writing it"
        )
        os.kill(victim, signal.SIGKILL)
        crasher.join(timeout=120)
        after = {p.name for p in folder.iterdir()}
        new_jsonl = sorted(n for n in after - before if n.endswith(".jsonl"))
        check(
            "crash: the killed request failed",
            outcome.get("result", (0,))[0] != 201,
            str(outcome.get("result"))[:120],
        )
        check("crash: no partial file under a final name", not new_jsonl, str(new_jsonl))
        check(
            "crash: leftover is only a temp file",
            all(n.endswith(".tmp") for n in after - before),
            str(sorted(after - before)),
        )
        wait_until(
            lambda: len([p for p in workers_of(server.pid) if p != victim]) == 2,
            30,
            "gunicorn to replace the worker",
        )
        check("crash: gunicorn replaced the worker", True)
        manage(env, "import_sessions", "--no-progress")
        with psycopg.connect(env["DATABASE_URL"].replace("postgres://", "postgresql://")) as db:
            rows = db.execute("SELECT path FROM sessions_app_session").fetchall()
        db_paths = {r[0] for r in rows}
        disk_paths = {str(p) for root in roots for p in root.rglob("*.jsonl")}
        check("crash: every database row has its file", all(Path(p).exists() for p in db_paths))
        check(
            "crash: every file on disk is in the database",
            disk_paths <= db_paths,
            str(sorted(disk_paths - db_paths))[:200],
        )
        status, body = request(f"{base}/api/sessions/{FORKED}/fork", token=token, body={"turn": 2})
        check(
            "crash: the next fork works",
            status == 201 and file_complete(Path(body["path"]), 2),
            str(status),
        )
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print(
        f"\nload: {args.seconds} s of wrk (2 threads, 16 connections) on {paths[0]} and {paths[1]}"
    )
    print(
        f"  requests/s {load['rps']:.0f}   p50 {load['p50']:.1f} ms   p99 {load['p99']:.1f} ms   errors {load['errors']} of {load['requests']}"
    )
    print(
        f"forks at once: 20 sent, {len(ok)} created, {len(refused)} refused, {len(set(titles))} distinct titles"
    )
    for name, ok_, detail in checks:
        print(f"  {'ok  ' if ok_ else 'FAIL'} {name}{'  (' + detail + ')' if detail else ''}")
    return 0 if all(ok_ for _, ok_, _ in checks) else 1


def _up(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _try(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except OSError as exc:  # the worker died under the request
        return (0, {"error": repr(exc)})


if __name__ == "__main__":
    sys.exit(main())
