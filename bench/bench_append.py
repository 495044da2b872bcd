"""Benchmark: one line appended to a long session, imported, at 3, 30 and 300 MB.

In one run: generates Claude Code sessions of each size (real turns of a fixture
session chained with fresh uuids, time moving forward), imports each, then appends
one real line to it (a prompt continuing the active leaf) and times only the
import call that picks it up, in this process, already started. Next to it, from
the same run: the baseline (reading the appended line and `orjson.loads` of it)
and the whole-graph analysis an append used to do (`indexing.INCREMENTAL` off).
Then, each in a fresh process, the peak RSS of importing every session from
scratch, of rendering its transcript page, and of importing one appended line.

    .venv/bin/python bench/bench_append.py [--sizes 3 30 300] [--appends 5] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import BIGREPO, django_setup, owner_bearer  # noqa: E402 (needs the path above)

MB = 1_000_000
ID_KEYS = ("uuid", "parentUuid", "logicalParentUuid", "leafUuid", "messageId")


def _hwm_mb(field: str = "VmHWM") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _time(record: dict[str, Any]) -> datetime | None:
    value = record.get("timestamp")
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _remap(record: dict[str, Any], ids: dict[str, str], session_id: str) -> dict[str, Any]:
    out = dict(record)
    for key in ID_KEYS:
        value = out.get(key)
        if isinstance(value, str) and value:
            out[key] = ids.setdefault(value, str(uuid.uuid4()))
    if "sessionId" in out:
        out["sessionId"] = session_id
    return out


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def long_session(folder: Path, *, target_bytes: int) -> Path:
    """A session of about `target_bytes`: copies of every line of BIGREPO, chained, streamed.

    Lines without a uuid (snapshots, bookkeeping) are kept; each copy's first record
    continues the previous copy's last one, and each copy is later than the one before.
    """
    sid = str(uuid.uuid4())
    template = [orjson.loads(raw) for raw in BIGREPO.read_bytes().splitlines()]
    times = [_time(r) for r in template]
    known = [t for t in times if t is not None]
    span = max(known) - min(known) + timedelta(seconds=1)
    chained = [r for r in template if r.get("uuid")]
    first, last = chained[0], chained[-1]["uuid"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    written, copy, tail = 0, 0, None
    with path.open("wb", buffering=1 << 20) as out:
        while written < target_bytes:
            ids: dict[str, str] = {}
            for record, at in zip(template, times, strict=True):
                fresh = _remap(record, ids, sid)
                if record is first and tail:
                    fresh["parentUuid"] = tail
                if at is not None:
                    fresh["timestamp"] = _stamp(at + span * copy)
                data = orjson.dumps(fresh) + b"\n"
                out.write(data)
                written += len(data)
            tail = ids[last]
            copy += 1
    return path


def _prompt_template() -> dict[str, Any]:
    for raw in BIGREPO.read_bytes().splitlines():
        record = orjson.loads(raw)
        message = record.get("message") or {}
        if record.get("type") == "user" and isinstance(message.get("content"), str):
            return record
    raise SystemExit("no prompt in the fixture")


def append_line(path: Path, session: Any, n: int) -> tuple[int, int]:
    """Append one real prompt continuing the active leaf; returns (offset, length)."""
    record = dict(_prompt_template())
    record |= {
        "uuid": str(uuid.uuid4()),
        "parentUuid": session.leaf_uuid,
        "sessionId": str(session.session_id),
        "timestamp": _stamp(
            datetime(2100, 1, 1, tzinfo=session.updated_at.tzinfo) + timedelta(seconds=n)
        ),
    }
    record["message"] = {**record["message"], "content": f"appended prompt {n}"}
    data = orjson.dumps(record) + b"\n"
    offset = path.stat().st_size
    with path.open("ab") as f:
        f.write(data)
    return offset, len(data)


def baseline_seconds(path: Path, offset: int, length: int) -> float:
    """Reading the appended line and `orjson.loads` of it."""
    start = time.perf_counter()
    with path.open("rb") as f:
        f.seek(offset)
        orjson.loads(f.read(length))
    return time.perf_counter() - start


def append_timings(
    root: Path, path: Path, appends: int, *, incremental: bool
) -> tuple[float, float, int]:
    """Median seconds of the import call and of the baseline; queries of the last import."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import Session
    from sessions_app.services.importing import indexing, sessions_import

    indexing.INCREMENTAL = incremental
    imports, baselines, queries = [], [], 0
    try:
        for n in range(appends):
            session = Session.objects.get(path=str(path))
            offset, length = append_line(path, session, n + (0 if incremental else 1000))
            baselines.append(baseline_seconds(path, offset, length))
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                report = sessions_import(roots=[root])
                imports.append(time.perf_counter() - start)
            queries = len(captured)
            assert report.records == 1 and not report.errors, report
    finally:
        indexing.INCREMENTAL = True
    return statistics.median(imports), statistics.median(baselines), queries


def parent_scan_seconds(path: Path) -> float:
    """The one size-bound part of the short path: do stored records name a new uuid as parent."""
    from sessions_app.models import Session
    from sessions_app.services.importing.storing import names_as_parent

    session = Session.objects.get(path=str(path))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        names_as_parent(session, [str(uuid.uuid4())])
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def child(data_dir: Path, root: Path, what: str) -> None:
    """In this fresh process: import `root` from scratch, or render its transcript page."""
    django_setup(data_dir)
    from django.test import Client

    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    before = _hwm_mb("VmRSS")
    start = time.perf_counter()
    if what == "import":
        sessions_import(roots=[root])
    elif what == "append":
        path = Path(Session.objects.get(path__startswith=str(root)).path)
        append_line(path, Session.objects.get(path=str(path)), 10**6)
        before = _hwm_mb("VmRSS")
        start = time.perf_counter()
        sessions_import(roots=[root])
    else:
        session = Session.objects.get(path__startswith=str(root))
        client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=owner_bearer())
        response = client.get(f"/sessions/{session.session_id}/")
        assert response.status_code == 200, response.status_code
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss_before": before, "rss_peak": _hwm_mb()}))


def _run_child(data_dir: Path, root: Path, what: str, roots: list[Path]) -> dict[str, float]:
    env = dict(os.environ, BRANCHBOARD_ROOTS=os.pathsep.join(str(r) for r in roots))
    out = subprocess.run(
        [sys.executable, __file__, "--child", what, str(data_dir), str(root)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 30, 300])
    parser.add_argument("--appends", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, data_dir, root = args.child
        child(Path(data_dir), Path(root), what)
        return

    work = Path(tempfile.mkdtemp(prefix="bb-bench-append-"))
    roots = {size: work / f"root-{size}" for size in args.sizes}
    os.environ["BRANCHBOARD_ROOTS"] = os.pathsep.join(str(r) for r in roots.values())
    try:
        paths = {}
        for size, root in roots.items():
            paths[size] = long_session(root / f"-bench-append-{size}", target_bytes=size * MB)
        # Fresh processes first, on the files as generated: peak memory of a whole import.
        memory = {}
        for size, root in roots.items():
            data = work / f"data-{size}"
            data.mkdir()
            memory[size] = tuple(
                _run_child(data, root, what, list(roots.values()))
                for what in ("import", "page", "append")
            )
        django_setup(work / "data")
        from sessions_app.services.importing import sessions_import

        for root in roots.values():
            sessions_import(roots=[root])
        print(
            f"{'session':>10} {'import':>10} {'baseline':>10} {'ratio':>7} {'queries':>8}"
            f" {'parent scan':>12} {'whole graph':>12} {'queries':>8}"
        )
        for size, root in roots.items():
            fast, base, queries = append_timings(root, paths[size], args.appends, incremental=True)
            slow, _, slow_queries = append_timings(
                root, paths[size], max(1, args.appends // 2), incremental=False
            )
            mb = paths[size].stat().st_size / MB
            print(
                f"{mb:7.0f} MB {fast * 1000:8.1f}ms {base * 1e6:8.1f}us {fast / base:7.0f}"
                f" {queries:8d} {parent_scan_seconds(paths[size]) * 1000:10.1f}ms"
                f" {slow * 1000:10.1f}ms {slow_queries:8d}"
            )
        print(
            "\npeak RSS in a fresh process (MB), from the RSS before the call: importing the"
            " session from scratch / rendering its transcript page / importing one appended line"
        )
        for size, runs in memory.items():
            cells = [
                f"{label} {run['rss_peak']:4.0f} (from {run['rss_before']:.0f},"
                f" {run['seconds']:.2f} s)"
                for label, run in zip(("import", "page", "append"), runs, strict=True)
            ]
            print(f"{paths[size].stat().st_size / MB:7.0f} MB  " + "  ".join(cells))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
