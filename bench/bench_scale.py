"""Benchmark: 1 GB of sessions imported into PostgreSQL; rate, database size, page times.

In one run: generates a corpus under /tmp (copies of the real fixture sessions over
many projects, one project of many small sessions, and one long session: the
shapes of `bench/corpus.py`), measures reading + `orjson.loads` of every line of
it (the baseline), imports it into a throwaway PostgreSQL database (created and
dropped here), and reports:

- the import rate next to the baseline, and the importer's peak memory;
- the database size per transcript MB (the whole database, and the records table
  with its indexes and TOAST, against the bytes imported);
- the watcher's steady state: a rescan of the unchanged corpus, and one with one
  line appended to the largest session;
- the sessions page of the largest project and a transcript page of the largest
  session (median of several requests through Django's test client, DEBUG off),
  with their SQL query counts and the indexes PostgreSQL chose for them.

    .venv/bin/python bench/bench_scale.py [--size-mb 1000] [--grow 10] [--keep] [--json]

`--grow N` then copies the session and record rows in SQL to N times as many (the
copies in one extra project, without files) and times the same pages again: the
page times on a records table as large as N times the corpus would give.

`DATABASE_SERVER` (default postgres://postgres@127.0.0.1:5432) names the server;
the database is `bb_scale_<pid>` and is dropped at the end unless `--keep`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import (  # noqa: E402
    long_session,
    owner_bearer,
    replicated_corpus,
    tiny_turns_session,
)

MB = 1_000_000
SERVER = os.environ.get("DATABASE_SERVER", "postgres://postgres@127.0.0.1:5432")


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def generate(root: Path, total: int, *, long_share: float, busy_share: float) -> dict[str, Any]:
    """The corpus: one long session, one project of many small sessions, copies of the rest."""
    start = time.perf_counter()
    long_bytes = int(total * long_share)
    path, long_lines = long_session(root / "-bench-long", target_bytes=long_bytes)
    busy = root / "-bench-busy"
    busy_bytes = int(total * busy_share)
    written = path.stat().st_size
    busy_sessions = 0
    made = 0
    while made < busy_bytes:
        session = tiny_turns_session(busy, turns=5 + busy_sessions % 40)
        made += session.stat().st_size
        busy_sessions += 1
    written += made
    files, copied = replicated_corpus(root / "copies", target_bytes=max(0, total - written))
    # The copies are one level deeper: move their project folders up to the root.
    for folder in (root / "copies").iterdir():
        folder.rename(root / folder.name)
    (root / "copies").rmdir()
    written += copied
    return {
        "seconds": time.perf_counter() - start,
        "bytes": written,
        "long_path": path,
        "long_lines": long_lines,
        "busy_sessions": busy_sessions,
        "copied_files": files,
    }


def raw_parse(root: Path) -> tuple[float, int, int]:
    """Read every line of every file and orjson.loads it: the rate to compare with."""
    start = time.perf_counter()
    total = lines = 0
    for path in root.rglob("*.jsonl"):
        with path.open("rb") as f:
            for line in f:
                total += len(line)
                lines += 1
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
    return time.perf_counter() - start, total, lines


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def django_setup(data_dir: Path, database: str, root: Path) -> None:
    """Django on the throwaway PostgreSQL database, migrated, in local mode."""
    for name in ("BRANCHBOARD_ALLOWED_HOSTS", "BRANCHBOARD_TEAM_MODE", "BRANCHBOARD_DEBUG"):
        os.environ.pop(name, None)
    os.environ["BRANCHBOARD_DATA_DIR"] = str(data_dir)
    os.environ["BRANCHBOARD_ROOTS"] = str(root)
    os.environ["DATABASE_URL"] = f"{SERVER}/{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "branchboard.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _append_line(path: Path) -> None:
    """One more record on the session's active leaf, as a CLI appends it."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - (1 << 20)))
        last = orjson.loads(f.read().splitlines()[-1])
    record = {**last, "uuid": str(uuid.uuid4()), "parentUuid": last["uuid"]}
    with path.open("ab") as f:
        f.write(orjson.dumps(record) + b"\n")
        f.flush()
        os.fsync(f.fileno())


def database_sizes() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute(
            "SELECT pg_database_size(current_database()),"
            " pg_total_relation_size('sessions_app_record'),"
            " pg_relation_size('sessions_app_record'),"
            " pg_indexes_size('sessions_app_record'),"
            " pg_total_relation_size('sessions_app_session'),"
            " (SELECT count(*) FROM sessions_app_record)"
        )
        db, total, heap, indexes, sessions, rows = cursor.fetchone()
        cursor.execute(
            "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid)"
            " FROM pg_index WHERE indrelid = 'sessions_app_record'::regclass ORDER BY 2 DESC"
        )
        per_index = dict(cursor.fetchall())
    return {
        "database": db,
        "records_total": total,
        "records_heap": heap,
        "records_indexes": indexes,
        "records_toast_etc": total - heap - indexes,
        "sessions_total": sessions,
        "record_rows": rows,
        "per_index": per_index,
    }


def _plan_scans(sql: str, params: Any = None) -> list[str]:
    """The scans PostgreSQL runs for one captured query: index (or seq), rows kept, rows filtered."""
    from django.db import connection

    if not sql.lstrip().upper().startswith("SELECT"):
        return []
    try:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
    except Exception:
        return []
    plan = plan if isinstance(plan, list) else json.loads(plan)
    found: list[str] = []

    def walk(node: dict) -> None:
        kind = node.get("Node Type", "")
        name = node.get("Index Name") if "Index" in kind else None
        if name or kind == "Seq Scan":
            rows = node.get("Actual Rows", 0) * node.get("Actual Loops", 1)
            removed = node.get("Rows Removed by Filter", 0) + node.get(
                "Rows Removed by Index Recheck", 0
            )
            what = name or f"seq scan {node.get('Relation Name')}"
            found.append(f"{what} ({rows} rows" + (f", {removed} filtered)" if removed else ")"))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return found


def measure(client, url: str, requests: int) -> dict[str, Any]:
    """Median and best time (ms) of `url`, its SQL queries, bytes and planned scans."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url)  # warm caches once
    assert response.status_code == 200, (url, response.status_code)
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
    # The statements with their parameters: a server-side cursor (`.iterator()` on
    # PostgreSQL) is logged without them, so they are taken here.
    statements: list[tuple[str, Any]] = []

    def record(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as queries, connection.execute_wrapper(record):
        response = client.get(url)
    scans: list[str] = []
    for sql, params in statements:
        scans.extend(_plan_scans(sql, params))
    return {
        "url": url,
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "queries": len(queries),
        "kb": len(response.content) / 1024,
        "scans": scans,
    }


def page_urls() -> list[tuple[str, str]]:
    """The pages to time: the sessions of the largest project, the largest session."""
    from django.db.models import Count

    from sessions_app.models import Project, Session

    busiest = (
        Session.objects.listed().values("project").annotate(n=Count("id")).order_by("-n").first()
    )
    n = busiest["n"]
    project = busiest["project"]
    largest = Session.objects.listed().order_by("-file_size").first()
    t = largest.turn_count
    size = largest.file_size / MB
    return [
        (f"projects page ({Project.objects.count()} projects)", "/"),
        (f"sessions page, largest project ({n})", f"/projects/{project}/"),
        ("  its last page, sorted by turns", _last_page_by_turns(project, n)),
        (
            f"transcript, largest session ({size:.0f} MB, {t} turns)",
            f"/sessions/{largest.session_id}/",
        ),
        ("  its middle page (?after=)", f"/sessions/{largest.session_id}/?after={t // 2}"),
    ]


def _last_page_by_turns(project: int, n: int) -> str:
    """The project's last page sorted by turns, as its "next" links reach it (a cursor)."""
    from sessions_app.models import Session

    if n <= 50:
        return f"/projects/{project}/?sort=turns"
    ordered = Session.objects.listed().filter(project=project).order_by("-turn_count", "-id")
    before_last = ordered[n - 51]
    return f"/projects/{project}/?sort=turns&after={before_last.pk}:{before_last.turn_count}"


def pages(urls: list[tuple[str, str]], requests: int) -> list[tuple[str, dict[str, Any]]]:
    from django.test import Client

    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=owner_bearer())
    return [(label, measure(client, url, requests)) for label, url in urls]


def grow(times: int) -> float:
    """Copy every session row and its records `times - 1` more times, in SQL.

    The copies go to one extra project, whose files do not exist: only the tables
    grow, so the same pages can be timed again on a records table `times` as large.
    """
    from django.db import connection, transaction

    from sessions_app.models import Project, Record, Session

    start = time.perf_counter()
    s_table, r_table = Session._meta.db_table, Record._meta.db_table
    s_cols = [f.column for f in Session._meta.concrete_fields if f.column != "id"]
    r_cols = [f.column for f in Record._meta.concrete_fields if f.column not in ("id",)]
    clone = Project.objects.create(agent="claude", folder="/nonexistent/bench-grown", root="/")
    for k in range(1, times):
        tag = f"#grown{k}#"
        picked = {
            "session_id": "gen_random_uuid()",
            "path": f"path || '{tag}' || id",
            "project_id": str(clone.pk),
            "parent_id": "NULL",
        }
        s_select = ", ".join(picked.get(c, f'"{c}"') for c in s_cols)
        r_select = ", ".join("m.new_id" if c == "session_id" else f'r."{c}"' for c in r_cols)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {s_table} ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in s_cols)}) "
                f"SELECT {s_select} FROM {s_table} WHERE path NOT LIKE '%#grown%'"
            )
            cursor.execute(
                f"INSERT INTO {r_table} ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in r_cols)}) "
                f"SELECT {r_select} FROM {r_table} r JOIN (SELECT id AS new_id,"
                f" split_part(path, '{tag}', 2)::bigint AS old_id FROM {s_table}"
                f" WHERE path LIKE '%{tag}%') m ON r.session_id = m.old_id"
            )
        print(f"  grown {k + 1}x in {time.perf_counter() - start:.0f} s", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return time.perf_counter() - start


def run(args: argparse.Namespace, work: Path, database: str) -> dict[str, Any]:
    root = work / "sessions"
    made = generate(root, int(args.size_mb * MB), long_share=0.1, busy_share=0.05)
    mb = made["bytes"] / MB
    print(
        f"generated {mb:.0f} MB in {made['seconds']:.0f} s: one {made['long_path'].stat().st_size / MB:.0f} MB"
        f" session, {made['busy_sessions']} small sessions in one project,"
        f" {made['copied_files']} copied fixture files",
        flush=True,
    )
    raw_parse(root)  # warm the page cache, as the import will find it
    raw, total, lines = min((raw_parse(root) for _ in range(2)), key=lambda r: r[0])
    _admin(f'CREATE DATABASE "{database}"')
    django_setup(work / "data", database, root)
    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    rss_before = _status_mb("VmRSS")
    start = time.perf_counter()
    report = sessions_import(roots=[root])
    first = time.perf_counter() - start
    rss_peak = _status_mb("VmHWM")
    print(f"imported: {report.summary()} in {first:.0f} s", flush=True)
    sizes = database_sizes()
    rescan = min(_timed(lambda: sessions_import(roots=[root])) for _ in range(3))
    appends = []
    for _ in range(3):
        _append_line(made["long_path"])
        appends.append(_timed(lambda: sessions_import(roots=[root])))
    urls = page_urls()
    long_row = Session.objects.get(path=str(made["long_path"]))
    assert long_row.file_size == made["long_path"].stat().st_size, "append not imported"
    result = {
        "bytes": total,
        "mb": total / MB,
        "lines": lines,
        "files": report.files,
        "sessions": Session.objects.listed().count(),
        "records": report.records,
        "errors": report.errors[:5],
        "raw_seconds": raw,
        "raw_mb_s": total / MB / raw,
        "import_seconds": first,
        "import_mb_s": total / MB / first,
        "import_vs_raw": raw / first,
        "rss_before_mb": rss_before,
        "rss_peak_mb": rss_peak,
        "sizes": sizes,
        "db_per_mb": sizes["database"] / total,
        "records_per_mb": sizes["records_total"] / total,
        "rescan_seconds": rescan,
        "append_seconds": min(appends),
        "long_session_mb": long_row.file_size / MB,
        "pages": pages(urls, args.requests),
        "requests": args.requests,
    }
    if args.grow > 1:
        print(f"growing the tables {args.grow}x in SQL ...", flush=True)
        result["grow"] = args.grow
        result["grow_seconds"] = grow(args.grow)
        result["grown_sizes"] = database_sizes()
        result["grown_pages"] = pages(urls, args.requests)
    return result


def show(r: dict[str, Any]) -> None:
    s = r["sizes"]
    print(
        f"\ncorpus: {r['mb']:.0f} MB, {r['files']} files, {r['sessions']} sessions,"
        f" {r['records']} records (PostgreSQL)"
    )
    print(
        f"{'read + orjson.loads every line':<46} {r['raw_mb_s']:>8.0f} MB/s  ({r['raw_seconds']:.1f} s)"
    )
    print(
        f"{'import into PostgreSQL':<46} {r['import_mb_s']:>8.1f} MB/s  ({r['import_seconds']:.1f} s)"
        f"  = {r['import_vs_raw'] * 100:.0f}% of the raw rate;"
        f" peak RSS {r['rss_peak_mb']:.0f} MB (before: {r['rss_before_mb']:.0f} MB)"
    )
    print(
        f"{'database size':<46} {s['database'] / MB:>8.0f} MB     = {r['db_per_mb']:.2f} MB per transcript MB"
    )
    print(
        f"{'  records table (heap + indexes + TOAST)':<46} {s['records_total'] / MB:>8.0f} MB     = "
        f"{r['records_per_mb']:.2f} MB per transcript MB; heap {s['records_heap'] / MB:.0f},"
        f" indexes {s['records_indexes'] / MB:.0f}, TOAST/maps {s['records_toast_etc'] / MB:.0f} MB;"
        f" {s['record_rows'] / max(1, r['mb']):.0f} rows per MB"
    )
    print(
        "  record indexes: "
        + ", ".join(f"{name} {size / MB:.0f} MB" for name, size in s["per_index"].items())
    )
    print(f"{'  sessions table':<46} {s['sessions_total'] / MB:>8.1f} MB")
    print(
        f"{'rescan, nothing changed (the watcher tick)':<46} {r['rescan_seconds']:>8.3f} s     = "
        f"{r['rescan_seconds'] / r['mb'] * 100:.3f} s per 100 MB"
    )
    print(
        f"{'rescan with 1 line appended to ' + format(r['long_session_mb'], '.0f') + ' MB session':<46}"
        f" {r['append_seconds']:>8.3f} s"
    )
    print(f"\n{'page':<46} {'median ms':>10} {'min ms':>8} {'queries':>8} {'KB':>6}")
    for label, p in r["pages"]:
        print(
            f"{label:<46} {p['median_ms']:>10.1f} {p['min_ms']:>8.1f} {p['queries']:>8}"
            f" {p['kb']:>6.0f}"
        )
    print("\nscans PostgreSQL ran for each page's queries (EXPLAIN ANALYZE):")
    for label, p in r["pages"]:
        print(f"  {label.strip()}: {'; '.join(p['scans'])}")
    if r.get("grow"):
        g = r["grown_sizes"]
        print(
            f"\nthe same pages with the tables grown {r['grow']}x in SQL ({r['grow_seconds']:.0f} s):"
            f" {g['record_rows']} record rows, records table {g['records_total'] / MB:.0f} MB,"
            f" database {g['database'] / MB:.0f} MB"
        )
        for label, p in r["grown_pages"]:
            print(
                f"{label:<46} {p['median_ms']:>10.1f} {p['min_ms']:>8.1f} {p['queries']:>8}"
                f" {p['kb']:>6.0f}"
            )
        for label, p in r["grown_pages"]:
            print(f"  {label.strip()}: {'; '.join(p['scans'])}")
    print(
        f"\n(median of {r['requests']} requests through Django's test client, PostgreSQL on loopback,"
        " DEBUG off; raw rate best of 2 after a warm-up read)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1000, help="corpus size (default 1000)")
    parser.add_argument("--requests", type=int, default=9, help="requests per page (median)")
    parser.add_argument("--keep", action="store_true", help="keep the files and the database")
    parser.add_argument(
        "--grow",
        type=int,
        default=0,
        help="then copy the session and record rows in SQL to N times as many and time"
        " the same pages again (e.g. 10: a records table as for 10 GB)",
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if free < args.size_mb * MB * 3:
        sys.exit(f"needs {args.size_mb * 3 / 1000:.1f} GB free in {tempfile.gettempdir()}")
    work = Path(tempfile.mkdtemp(prefix="bb-bench-scale-"))
    database = f"bb_scale_{os.getpid()}"
    try:
        result = run(args, work, database)
    finally:
        if not args.keep:
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            with contextlib.suppress(Exception):
                _admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept: {work} and database {database}")
    show(result)
    if args.json:
        for key in ("pages", "grown_pages"):
            if key in result:
                result[key] = {label.strip(): p for label, p in result[key]}
        print("BENCH_JSON " + json.dumps(result, default=str))


if __name__ == "__main__":
    main()
