"""Benchmark: import throughput next to the raw rate of reading and parsing the lines.

In one run: generates a corpus (real sessions replicated with fresh ids), measures
reading + `orjson.loads` of every line of it, imports it into a fresh SQLite
database, imports it again unchanged, and imports one generated large session in
a fresh process to read its peak memory.

    .venv/bin/python bench/bench_import.py [--size-mb 260] [--session-mb 300] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import django_setup  # noqa: E402 (needs the path above)


def _hwm_mb(field: str = "VmHWM") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def raw_parse_seconds(root: Path) -> tuple[float, int]:
    """Read every line of every file and orjson.loads it: the rate to compare with."""
    start = time.perf_counter()
    total = 0
    for path in root.rglob("*.jsonl"):
        with path.open("rb") as f:
            for line in f:
                total += len(line)
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
    return time.perf_counter() - start, total


def child(data_dir: Path, root: Path) -> None:
    """Import `root` in this fresh process and print time and memory as JSON."""
    django_setup(data_dir)
    from sessions_app.services.importing import sessions_import

    before = _hwm_mb("VmRSS")
    start = time.perf_counter()
    report = sessions_import(roots=[root])
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": seconds,
                "rss_before": before,
                "rss_peak": _hwm_mb(),
                "records": report.records,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=260)
    parser.add_argument("--session-mb", type=int, default=300)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    from bench.corpus import long_session, replicated_corpus

    work = Path(tempfile.mkdtemp(prefix="bb-bench-import-"))
    try:
        corpus = work / "corpus"
        files, size = replicated_corpus(corpus, target_bytes=args.size_mb * 1_000_000)
        mb = size / 1e6
        raw_parse_seconds(corpus)  # once to warm the page cache, as the import will find it
        raw, _ = min((raw_parse_seconds(corpus) for _ in range(3)), key=lambda r: r[0])

        django_setup(work / "data")
        from sessions_app.services.importing import sessions_import

        start = time.perf_counter()
        report = sessions_import(roots=[corpus])
        first = time.perf_counter() - start
        assert not report.errors, report.errors[:5]
        second = min(_timed(lambda: sessions_import(roots=[corpus])) for _ in range(3))

        big = work / "big"
        path, lines = long_session(big / "-work-big", target_bytes=args.session_mb * 1_000_000)
        result = subprocess.run(
            [sys.executable, __file__, "--child", str(work / "data-big"), str(big)],
            check=True,
            capture_output=True,
            text=True,
        )
        one = json.loads(result.stdout.strip().splitlines()[-1])
        big_mb = path.stat().st_size / 1e6
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\ncorpus: {files} session files, {mb:.0f} MB, {report.records} records")
    print(f"{'read + orjson.loads every line':<44} {mb / raw:>8.0f} MB/s  ({raw:.2f} s)")
    print(
        f"{'import (parse, graph, turns, database)':<44} {mb / first:>8.0f} MB/s  ({first:.2f} s)"
        f"  = {raw / first * 100:.0f}% of the raw rate"
    )
    print(
        f"{'second import, nothing changed':<44} {second:>8.3f} s     = {second / mb * 100:.3f} s per 100 MB"
    )
    print(
        f"{'one session of ' + str(round(big_mb)) + ' MB (' + str(lines) + ' lines)':<44} "
        f"{one['seconds']:>8.2f} s     peak RSS {one['rss_peak']:.0f} MB (process before import: "
        f"{one['rss_before']:.0f} MB)"
    )


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()
