"""Live pages under load: 50 open live transcripts polling, and how fast other pages still answer.

Runs the deployed setup as its own processes (gunicorn with deploy/gunicorn.conf.py,
the watcher `import_sessions --watch`) on a temporary SQLite data folder, then:

1. baseline: the transcript page and the projects list, requested one after another,
   with nobody polling (median and p95);
2. the same while 50 "pages" poll their live tail once a second, each on its own
   kept-alive connection as a browser would (what an idle live page costs: the
   server's CPU time per poll, and the polls' own times);
3. latency: a turn appended to the session file, and the time until the live tail
   answers with it (the watcher's pass plus the import); a page sees it at most one
   poll interval (1 s) later.

    .venv/bin/python bench/bench_live.py [--pages 50] [--seconds 20]
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import owner_bearer  # noqa: E402
from tests.factories import grow, session_file  # noqa: E402

POLL_SECONDS = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Every request's headers; the owner's bearer token once the data folder has it.
HEADERS = {"HX-Request": "true"}


def get(conn: http.client.HTTPConnection, path: str) -> tuple[int, float]:
    start = time.perf_counter()
    conn.request("GET", path, headers=HEADERS)
    response = conn.getresponse()
    response.read()
    return response.status, time.perf_counter() - start


def timings(port: int, paths: list[str], rounds: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out: list[float] = []
    for _ in range(rounds):
        for path in paths:
            status, took = get(conn, path)
            assert status == 200, (path, status)
            out.append(took)
    conn.close()
    return out


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def server_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [master, *map(int, children)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    root, data = work / "root", work / "data"
    path, records = session_file(root, 40)
    sid = records[0]["sessionId"]
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        BRANCHBOARD_DATA_DIR=str(data),
        BRANCHBOARD_ROOTS=str(root),
        BRANCHBOARD_ACCESS_LOG="/dev/null",
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    HEADERS["Authorization"] = owner_bearer(data)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "branchboard.wsgi", "-c", "deploy/gunicorn.conf.py",
         "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    watcher = subprocess.Popen(
        [sys.executable, "manage.py", "import_sessions", "--watch", "--no-progress"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    stop = threading.Event()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                status, _ = get(conn, f"/sessions/{sid}/")
                conn.close()
                if status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server or the import did not come up"
            time.sleep(0.2)
        workers = len(server_pids(server.pid)) - 1
        pages = [f"/sessions/{sid}/", "/"]
        timings(port, pages, 5)  # warm up every worker's first request
        alone = timings(port, pages, 40)

        lines = 160
        live = f"/sessions/{sid}/live/?lines={lines}&after=39&from=0&skip=0"
        polls: list[float] = []
        lock = threading.Lock()

        def poller(offset: float) -> None:
            time.sleep(offset)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            while not stop.is_set():
                status, took = get(conn, live)
                with lock:
                    polls.append(took)
                assert status == 204, status
                stop.wait(POLL_SECONDS)
            conn.close()

        threads = [
            threading.Thread(target=poller, args=(i * POLL_SECONDS / args.pages,), daemon=True)
            for i in range(args.pages)
        ]
        for t in threads:
            t.start()
        time.sleep(2)
        # Only the live pages: what they cost the server while idle.
        pids = server_pids(server.pid)
        cpu_before, polls_before, wall = cpu_seconds(pids), len(polls), time.monotonic()
        time.sleep(args.seconds / 2)
        cpu = cpu_seconds(pids) - cpu_before
        idle_polls = len(polls) - polls_before
        wall = time.monotonic() - wall
        # Other pages while they poll.
        busy = []
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            busy += timings(port, pages, 1)
            time.sleep(0.05)
        stop.set()
        for t in threads:
            t.join(timeout=10)

        # Latency: append a turn, wait for the live tail to answer with it.
        latencies = []
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for n in range(41, 46):
            time.sleep(1.2)
            written = time.perf_counter()
            grow(path, records, n)
            while True:
                status, _ = get(conn, f"/sessions/{sid}/live/?lines={lines}&after={n - 2}")
                if status == 200:
                    break
                time.sleep(0.02)
            latencies.append(time.perf_counter() - written)
            lines += 4
        conn.close()
    finally:
        stop.set()
        for proc in (server, watcher):
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)

    ms = 1000
    print(f"gunicorn workers: {workers} (deploy/gunicorn.conf.py), watcher debounce as deployed")
    print(
        f"other pages alone:            median {statistics.median(alone) * ms:.1f} ms, "
        f"p95 {p95(alone) * ms:.1f} ms ({len(alone)} requests)"
    )
    print(
        f"other pages, {args.pages} live pages open: median {statistics.median(busy) * ms:.1f} ms, "
        f"p95 {p95(busy) * ms:.1f} ms, max {max(busy) * ms:.1f} ms ({len(busy)} requests)"
    )
    print(
        f"idle polls: {idle_polls / wall:.1f} per second, each median "
        f"{statistics.median(polls) * ms:.2f} ms, p95 {p95(polls) * ms:.2f} ms; "
        f"server CPU {cpu / max(idle_polls, 1) * ms:.2f} ms per poll, "
        f"{cpu / wall * 100:.1f}% of one core for {args.pages} idle live pages"
    )
    print(
        f"appended turn to live tail: median {statistics.median(latencies) * ms:.0f} ms, "
        f"max {max(latencies) * ms:.0f} ms; seen by a page within that plus one poll "
        f"({POLL_SECONDS:.0f} s)"
    )
    print(f"run id {uuid.uuid4().hex[:8]}")


if __name__ == "__main__":
    main()
