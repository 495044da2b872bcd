"""Benchmark: one reader of a large session against everyone else, over HTTP through gunicorn.

A session of `--turns` small turns (4 records each: 25,000 turns is 100,000 records)
and one a tenth its size are generated and imported into a fresh database (SQLite, or
PostgreSQL with `--postgres`), then gunicorn is started as `make run` starts it
(`deploy/gunicorn.conf.py`, 2 workers of 2 threads) on a free loopback port, and:

1. `/recent/` alone: the median of 5 GETs (after one warm-up);
2. `export.html` of each session alone: seconds, bytes, and the serving worker's
   resident memory at its peak during the export less its memory before (every
   worker's VmRSS read from /proc every 20 ms);
3. `--exports` (4) concurrent `export.html` of the large session, and meanwhile
   `/recent/` asked again and again, one at a time, until every export has ended:
   each `/recent/`'s seconds, and each export's status, seconds and bytes;
4. the large session's `usage-turns/` panel (as htmx asks for it): seconds and bytes.

Times are from sending the request to the last byte of its answer.

    .venv/bin/python bench/bench_heavy.py [--turns 25000] [--exports 4] [--postgres]

`--long-turn 20000` measures only `export.html` alone of two sessions of one turn each, of
2,000 and 20,000 tool calls (4,000 and 40,000 records): whether an export's memory grows
with the longest turn.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_search import PG_URL  # noqa: E402 (needs the path above)
from bench.bench_search_http import _free_port, _serve, _stop  # noqa: E402
from bench.corpus import fresh_database, tiny_turns_session  # noqa: E402

PG_BENCH_DB = f"bench_heavy_{os.getpid()}"


def child(work: Path) -> dict[str, Any]:
    """Migrate and import the generated sessions; the parent reads their ids."""
    import django

    django.setup()
    from django.core.management import call_command

    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    call_command("migrate", verbosity=0)
    start = time.perf_counter()
    sessions_import(roots=[work / "corpus"])
    seconds = time.perf_counter() - start
    sessions = Session.objects.order_by("record_count")
    return {
        "import": seconds,
        "sessions": [(str(s.session_id), s.turn_count, s.record_count) for s in sessions],
    }


def _get(port: int, url: str, headers: dict[str, str] | None = None) -> tuple[int, float, int]:
    """Status, seconds and bytes of one GET on a connection of its own."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    start = time.perf_counter()
    try:
        conn.request("GET", url, headers=headers or {})
        response = conn.getresponse()
        size = 0
        while chunk := response.read(1 << 16):
            size += len(chunk)
        return response.status, time.perf_counter() - start, size
    finally:
        conn.close()


def _workers(master: int) -> list[int]:
    """The pids whose parent is gunicorn's master."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == master:
            found.append(int(entry.name))
    return found


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _export_alone(port: int, master: int, session_id: str) -> dict[str, Any]:
    """One export.html: status, seconds, bytes and the serving worker's memory growth."""
    workers = _workers(master)
    before = {pid: _rss_mb(pid) for pid in workers}
    peak = dict(before)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            for pid in workers:
                peak[pid] = max(peak[pid], _rss_mb(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        status, seconds, size = _get(port, f"/sessions/{session_id}/export.html")
    finally:
        done.set()
        sampler.join()
    growth = max(peak[pid] - before[pid] for pid in workers)
    return {"status": status, "seconds": seconds, "bytes": size, "rss_growth_mb": growth}


def _under_load(port: int, session_id: str, exports: int) -> dict[str, Any]:
    """`exports` concurrent export.html, and /recent/ one after another until they end."""
    results: list[tuple[int, float, int]] = []
    started = threading.Barrier(exports + 1)

    def export() -> None:
        started.wait()
        results.append(_get(port, f"/sessions/{session_id}/export.html"))

    threads = [threading.Thread(target=export) for _ in range(exports)]
    for t in threads:
        t.start()
    started.wait()
    time.sleep(0.5)  # the exports' requests are sent and being served
    recent: list[float] = []
    while any(t.is_alive() for t in threads) or not recent:
        status, seconds, _ = _get(port, "/recent/")
        if status != 200:
            sys.exit(f"/recent/ answered {status} while the exports ran")
        recent.append(seconds)
    for t in threads:
        t.join()
    return {"recent": recent, "exports": sorted(results)}


def measure(work: Path, env: dict[str, str], exports: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(work)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"child failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    (small, small_turns, _), (large, large_turns, large_records) = result["sessions"]
    port = _free_port()
    server = _serve(env, port, work / f"gunicorn-{port}.log")
    try:
        _get(port, "/recent/")
        result["recent_alone"] = statistics.median(_get(port, "/recent/")[1] for _ in range(5))
        result["export_small"] = _export_alone(port, server.pid, small)
        result["export_large"] = _export_alone(port, server.pid, large)
        result["under_load"] = _under_load(port, large, exports)
        panel = f"/sessions/{large}/usage-turns/"
        answers = [_get(port, panel, {"HX-Request": "true"}) for _ in range(3)]
        result["usage_turns"] = {
            "status": answers[0][0],
            "seconds": statistics.median(a[1] for a in answers),
            "bytes": answers[0][2],
        }
    finally:
        _stop(server)
    result["sizes"] = {"small": small_turns, "large": large_turns, "records": large_records}
    return result


def measure_long_turn(work: Path, env: dict[str, str]) -> dict[str, Any]:
    """`--long-turn`: export.html alone of each one-turn session, as `_export_alone` says."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(work)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"child failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = _serve(env, port, work / f"gunicorn-{port}.log")
    try:
        _get(port, "/recent/")
        result["exports"] = [
            {"records": records, **_export_alone(port, server.pid, sid)}
            for sid, _turns, records in result["sessions"]
        ]
    finally:
        _stop(server)
    return result


def report(backend: str, r: dict[str, Any], exports: int) -> str:
    sizes = r["sizes"]
    lines = [
        f"{backend}: a session of {sizes['large']} turns ({sizes['records']} records), "
        f"imported in {r['import']:.1f} s with one of {sizes['small']} turns",
        f"  /recent/ alone: {r['recent_alone'] * 1000:.0f} ms (median of 5)",
    ]
    for name in ("small", "large"):
        e = r[f"export_{name}"]
        lines.append(
            f"  export.html alone, {sizes[name]} turns: HTTP {e['status']}, {e['seconds']:.1f} s, "
            f"{e['bytes'] / 1e6:.1f} MB, worker memory +{e['rss_growth_mb']:.0f} MB at its peak"
        )
    load = r["under_load"]
    recent = load["recent"]
    lines.append(
        f"  /recent/ during {exports} concurrent export.html of {sizes['large']} turns: "
        f"{len(recent)} asked, first {recent[0]:.2f} s, median {statistics.median(recent):.2f} s, "
        f"max {max(recent):.2f} s"
    )
    lines.append(
        "    the exports: "
        + ", ".join(f"HTTP {s} {t:.1f} s {b / 1e6:.1f} MB" for s, t, b in load["exports"])
    )
    u = r["usage_turns"]
    lines.append(
        f"  usage-turns/ of {sizes['large']} turns: HTTP {u['status']}, {u['seconds']:.2f} s, "
        f"{u['bytes'] / 1e6:.2f} MB (median of 3)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=25_000, help="turns of the large session")
    parser.add_argument("--exports", type=int, default=4, help="concurrent exports")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    parser.add_argument("--postgres-url", default=PG_URL, help="server to create the db on")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    parser.add_argument(
        "--long-turn",
        type=int,
        default=0,
        metavar="CALLS",
        help="only export.html of two one-turn sessions, of CALLS/10 and CALLS tool calls",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bb-bench-heavy-"))
    backend = "postgres" if args.postgres else "sqlite"
    if args.long_turn:
        from bench.bench_pages import one_turn_session

        try:
            for calls in (args.long_turn // 10, args.long_turn):
                one_turn_session(work / "corpus" / "-work-bench", "calls", calls=calls)
            with fresh_database(backend, work / "data", args.postgres_url, PG_BENCH_DB) as env:
                result = measure_long_turn(work, env)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for e in result["exports"]:
            print(
                f"{backend}: export.html alone, one turn of {e['records']} records: HTTP "
                f"{e['status']}, {e['seconds']:.1f} s, {e['bytes'] / 1e6:.1f} MB, worker memory "
                f"+{e['rss_growth_mb']:.0f} MB at its peak"
            )
        print("BENCH_JSON " + json.dumps({"heavy_long_turn": result}))
        return
    try:
        for turns in (args.turns // 10, args.turns):
            tiny_turns_session(work / "corpus" / "-work-bench", turns=turns)
        with fresh_database(backend, work / "data", args.postgres_url, PG_BENCH_DB) as env:
            result = measure(work, env, args.exports)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(report(backend, result, args.exports))
    recent = result["under_load"].pop("recent")
    result["under_load"]["recent_summary"] = {
        "asked": len(recent),
        "first": recent[0],
        "median": statistics.median(recent),
        "max": max(recent),
    }
    print("BENCH_JSON " + json.dumps({"heavy": result}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]))))
    else:
        main()
