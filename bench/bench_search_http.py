"""Benchmark: search as the user gets it, `/search/` and `/api/search` over HTTP through gunicorn.

In one run, on the corpus `bench_search` generates (copies of the fixture sessions with
fresh ids, identifiers planted), for SQLite and, with `--postgres`, PostgreSQL:

1. a fresh database: `sessions_import` then `search_refresh` (and ANALYZE on PostgreSQL),
   an API token issued, in a subprocess;
2. the baseline, in that same subprocess: the search function (`search()`), and the
   function with its links (`search()` + `link_hits()`), per query 1 warm-up + `--repeat`
   timed runs, the median counting;
3. gunicorn started as `make run` starts it (`deploy/gunicorn.conf.py`, 2 workers) on a
   free loopback port, polled until it answers; then each query GET through `/search/`
   and `/api/search` (token), on one kept-alive connection, 1 warm-up + `--repeat` timed
   runs: the time from sending the request to the last byte of the answer.

Reported: median and p95 (nearest rank) over the 24 everyday and code queries of each
figure, the 5 slowest HTTP queries, against the target (median <= 10 ms, p95 <= 50 ms).

    .venv/bin/python bench/bench_search_http.py [--size-mb 100] [--postgres] [--repeat 5]

`--work DIR` keeps the corpus and both databases in DIR (PostgreSQL's named after it)
and a later run with the same DIR times them again without generating or importing:
to try a change at once (the figures then come from a database built by older code).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_search import (  # noqa: E402 (needs the path above)
    PG_URL,
    PLANTED,
    QUERIES,
    RECASED,
    _percentile,
    generate_corpus,
    plant,
)
from bench.corpus import fresh_database  # noqa: E402

MB = 1_000_000
PG_BENCH_DB = f"bench_search_http_{os.getpid()}"
TARGETS = {"median": 10.0, "p95": 50.0}  # ms, through HTTP, both databases at 1 GB
# Everyday words, phrases and code (22), and two planted identifiers: 24 queries.
HTTP_QUERIES = [q for q, cat in QUERIES if cat in ("word", "words", "phrase", "code")]
HTTP_QUERIES += [RECASED.get(ident, ident) for ident, _ in PLANTED[:2]]
PATHS = ("/search/", "/api/search")


def child(work: Path) -> dict[str, Any]:
    """Import, index, issue a token and time the functions; the parent reads the JSON."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from sessions_app.models import ApiToken
    from sessions_app.pages.search import link_hits
    from sessions_app.selectors.search import SearchQuery, search
    from sessions_app.services.importing import sessions_import
    from sessions_app.services.searching import search_refresh

    plan = json.loads((work / "plan.json").read_text())
    call_command("migrate", verbosity=0)
    built_marker = Path(os.environ["BRANCHBOARD_DATA_DIR"]) / "bench-built.json"
    if built_marker.exists():  # --work: imported by an earlier run
        import_s, records, errors = json.loads(built_marker.read_text())
    else:
        start = time.perf_counter()
        imported = sessions_import(roots=[work / "corpus"])
        import_s = time.perf_counter() - start
        built = search_refresh()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        records, errors = imported.records, len(imported.errors) + len(built.errors)
        if plan.get("keep"):
            built_marker.write_text(json.dumps([import_s, records, errors]))

    def bare(q: str) -> Any:
        return search(SearchQuery(q))

    def linked(q: str) -> Any:
        results = search(SearchQuery(q))
        link_hits(results, q)
        return results

    times: dict[str, dict[str, float]] = {"search": {}, "search+links": {}}
    hits: dict[str, int] = {}
    for q in HTTP_QUERIES:
        for name, run in (("search", bare), ("search+links", linked)):
            results = run(q)
            measured = []
            for _ in range(plan["repeat"]):
                start = time.perf_counter()
                results = run(q)
                measured.append((time.perf_counter() - start) * 1000)
            times[name][q] = statistics.median(measured)
        hits[q] = sum(len(g.hits) for g in results.groups)
    return {
        "import": import_s,
        "records": records,
        "errors": errors,
        "token": ApiToken.issue(name="bench")[1],
        "times": times,
        "hits": hits,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    """gunicorn as `make run` starts it, answering once `/` does (polled, 60 s at most)."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "branchboard.wsgi",
            "--config",
            "deploy/gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{port}",
        ],
        env={**env, "BRANCHBOARD_WORKERS": "2", "BRANCHBOARD_ACCESS_LOG": "/dev/null"},
        cwd=ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"gunicorn exited:\n{log.read_text()[-3000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/")
            conn.getresponse().read()
            conn.close()
            return server
        except OSError:
            time.sleep(0.1)  # polling for the server to listen, with a deadline
    _stop(server)
    sys.exit("gunicorn did not answer within 60 s")


def _stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _http_times(port: int, token: str, repeat: int) -> dict[str, dict[str, float]]:
    """Per path and query, the median ms from sending the GET to its answer's last byte."""
    headers = {"Authorization": f"Bearer {token}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    times: dict[str, dict[str, float]] = {path: {} for path in PATHS}
    for q in HTTP_QUERIES:
        for path in PATHS:
            url = f"{path}?{urlencode({'q': q})}"
            measured = []
            for n in range(repeat + 1):
                start = time.perf_counter()
                conn.request("GET", url, headers=headers)
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    sys.exit(f"GET {url}: HTTP {response.status}")
                if n:  # the first is the warm-up
                    measured.append((time.perf_counter() - start) * 1000)
            times[path][q] = statistics.median(measured)
    conn.close()
    return times


def _summary(times: dict[str, float]) -> tuple[float, float]:
    values = list(times.values())
    return statistics.median(values), _percentile(values, 95)


def measure(work: Path, env: dict[str, str], repeat: int) -> dict[str, Any]:
    """One database: the child's import and function times, then HTTP through gunicorn."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(work)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"child failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = _serve(env, port, work / f"gunicorn-{port}.log")
    try:
        result["times"].update(_http_times(port, result["token"], repeat))
    finally:
        _stop(server)
    return result


def report(size: int, results: dict[str, dict[str, Any]]) -> str:
    """Median and p95 of each figure, one column per database, then the slowest queries."""
    names = ["search", "search+links", *PATHS]
    labels = {
        "search": "search() (baseline)",
        "search+links": "search() + links",
        "/search/": "GET /search/ (HTTP)",
        "/api/search": "GET /api/search (HTTP)",
    }
    lines = [
        f"search over HTTP, {size / MB:.0f} MB, {len(HTTP_QUERIES)} queries "
        f"(median / p95 ms; target {TARGETS['median']:.0f} / {TARGETS['p95']:.0f})"
    ]
    header = f"{'':28}" + "".join(f"{b:>22}" for b in results)
    lines.append(header)
    for name in names:
        cells = []
        for r in results.values():
            median, p95 = _summary(r["times"][name])
            cells.append(f"{median:9.1f} / {p95:8.1f}")
        lines.append(f"{labels[name]:28}" + "".join(f"{c:>22}" for c in cells))
    for backend, r in results.items():
        lines.append(f"{backend}: import {r['import']:.1f} s, {r['records']} records, "
                     f"{r['errors']} errors")  # fmt: skip
        http_ms = {q: max(r["times"][p][q] for p in PATHS) for q in HTTP_QUERIES}
        slow = sorted(http_ms, key=http_ms.get, reverse=True)[:5]  # type: ignore[arg-type]
        lines.append(
            "  slowest over HTTP: "
            + ", ".join(f"{q!r} {http_ms[q]:.1f} ms ({r['hits'][q]} hits)" for q in slow)
        )
    return "\n".join(lines)


def summary_rows(size: int, results: dict[str, dict[str, Any]]) -> list[list[str]]:
    """run_all's rows: what, figure, same-run baseline, ratio, target."""
    rows = []
    for backend, r in results.items():
        base_median, base_p95 = _summary(r["times"]["search"])
        for path in PATHS:
            median, p95 = _summary(r["times"][path])
            rows.append(
                [
                    f"search over HTTP: GET {path}, {backend}, {size / MB:.0f} MB (median / p95)",
                    f"{median:.1f} / {p95:.1f} ms",
                    f"search() {base_median:.1f} / {base_p95:.1f} ms",
                    f"{median / base_median:.2f}x / {p95 / base_p95:.2f}x",
                    f"<= {TARGETS['median']:.0f} / {TARGETS['p95']:.0f} ms at 1 GB",
                ]
            )
    return rows


@contextmanager
def _database(backend: str, work: Path, args: argparse.Namespace) -> Iterator[dict[str, str]]:
    """A fresh database for `backend`; with `--work`, the one kept there (PostgreSQL's
    named after the folder), made once and never dropped."""
    if args.work is None:
        with fresh_database(
            backend, work / f"data-{backend}", args.postgres_url, PG_BENCH_DB
        ) as env:
            yield env
        return
    env = dict(os.environ, BRANCHBOARD_DATA_DIR=str(work / f"data-{backend}"))
    env["DJANGO_SETTINGS_MODULE"] = "branchboard.settings"
    env.pop("DATABASE_URL", None)
    if backend == "postgres":
        import psycopg

        name = "bench_search_http_" + re.sub(r"[^a-z0-9]+", "_", work.name.lower())
        parts = urlsplit(args.postgres_url)
        env["DATABASE_URL"] = urlunsplit(parts._replace(path="/" + name))
        admin = args.postgres_url.replace("postgres://", "postgresql://", 1)
        with psycopg.connect(admin, autocommit=True) as conn:
            there = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            if there.fetchone() is None:
                (work / f"data-{backend}" / "bench-built.json").unlink(missing_ok=True)
                conn.execute(f"CREATE DATABASE {name}")
    yield env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=100, help="corpus size")
    parser.add_argument("--postgres", action="store_true", help="also measure PostgreSQL")
    parser.add_argument("--postgres-url", default=PG_URL, help="server to create the db on")
    parser.add_argument("--tmpdir", type=Path, default=None, help="where the temp folder goes")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each query")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    parser.add_argument(
        "--work", type=Path, default=None, help="keep (or reuse) the corpus and databases here"
    )
    args = parser.parse_args()

    if args.work is not None:
        work = args.work.resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="bb-bench-search-http-", dir=args.tmpdir))
    try:
        start = time.perf_counter()
        if not (work / "corpus" / "generated").exists():
            shutil.rmtree(work / "corpus", ignore_errors=True)
            corpus = generate_corpus(work / "corpus", int(args.size_mb * MB))
            plant(corpus["mains"])
            (work / "corpus" / "generated").touch()
            print(f"generated in {time.perf_counter() - start:.1f} s under {work}", flush=True)
        plan = {"repeat": args.repeat, "keep": args.work is not None}
        (work / "plan.json").write_text(json.dumps(plan))
        size = sum(p.stat().st_size for p in (work / "corpus").rglob("*.jsonl"))
        results = {}
        for backend in ["sqlite"] + (["postgres"] if args.postgres else []):
            print(f"measuring {backend} ...", flush=True)
            start = time.perf_counter()
            with _database(backend, work, args) as env:
                results[backend] = measure(work, env, args.repeat)
            print(f"  done in {time.perf_counter() - start:.0f} s", flush=True)
    finally:
        if args.keep or args.work is not None:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(report(size, results))
    print("BENCH_JSON " + json.dumps({"search_http_rows": summary_rows(size, results)}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]))))
    else:
        main()
