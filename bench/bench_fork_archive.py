"""Benchmark: the archive's share of a fork, with and without it, alternately in one process.

A fork's archive pieces are made (zstd, SHA-256) in a thread while the new file is
written (`PieceMaker`) and stored with its rows (`archive_made`). On a shared machine a
fork's wall time varies more than the archive costs, so each run prints the process's
CPU time (every thread's) beside its wall time, and the archive's parts: the thread's
CPU in zstd and SHA-256, the wait for it once the file is written, and the storing of
the pieces inside the registering transaction. `cp` + `sync` of the file is the baseline.

    .venv/bin/python bench/bench_fork_archive.py [--size-mb 30] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_fork import _remove_forks, cp_sync, generate  # noqa: E402
from bench.corpus import django_setup  # noqa: E402

PARTS: dict[str, float] = {}


def _instrument() -> None:
    """Time the archive's parts by wrapping them (the code itself is unchanged)."""
    from sessions_app.services.archive import making as archive_making
    from sessions_app.services.branching import deriving

    maker = archive_making.PieceMaker
    store, pieces, made = maker._store, maker.pieces, archive_making.archive_made

    def timed_store(self: Any, *args: Any) -> None:
        start = time.thread_time()
        store(self, *args)
        PARTS["thread cpu"] = PARTS.get("thread cpu", 0.0) + time.thread_time() - start

    def timed_pieces(self: Any, tail: bytes) -> Iterator[Any]:
        start = time.perf_counter()
        for n, piece in enumerate(pieces(self, tail)):
            if n == 0:
                PARTS["wait"] = time.perf_counter() - start
            yield piece

    def timed_made(**kwargs: Any) -> bool:
        start = time.perf_counter()
        stored = made(**kwargs)
        PARTS["store"] = time.perf_counter() - start
        return stored

    maker._store = timed_store  # type: ignore[method-assign]
    maker.pieces = timed_pieces  # type: ignore[method-assign]
    deriving.archive_made = timed_made  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=30, help="session size in MB")
    parser.add_argument("--runs", type=int, default=3, help="forks with and without, each")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bb-bench-fork-archive-"))
    try:
        django_setup(work / "data")
        from django.conf import settings

        from sessions_app.models import Session
        from sessions_app.services.branching import session_fork
        from sessions_app.services.importing import sessions_import

        _instrument()
        root = work / "root"
        path, _ = generate(root / "-work-bench", target_bytes=int(args.size_mb * 1_000_000))
        old = time.time() - 60
        os.utime(path, (old, old))
        sessions_import(roots=[root])
        session = Session.objects.select_related("project").get(path=str(path))
        print(f"{path.stat().st_size / 1e6:.0f} MB session, branch of the whole, SQLite/PG as set")
        print(f"{'archive':<8} {'cp+sync s':>9} {'wall s':>7} {'cpu s':>6} "
              f"{'thread cpu':>10} {'wait':>6} {'store':>6}")  # fmt: skip
        session_fork(session=session, turn=None)  # warm-up: the first fork imports and caches
        _remove_forks(session.pk)
        seen: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(args.runs):
            for on in (True, False):
                settings.ARCHIVE = on
                base = cp_sync(path, work)
                PARTS.clear()
                wall, cpu = time.perf_counter(), time.process_time()
                session_fork(session=session, turn=None)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                _remove_forks(session.pk)
                seen[on].append((wall, cpu))
                parts = " ".join(
                    f"{PARTS.get(k, 0.0):>{w}.3f}" for k, w in (("thread cpu", 10), ("wait", 6),
                                                               ("store", 6))
                )  # fmt: skip
                label = "on" if on else "off"
                print(f"{label:<8} {base:>9.3f} {wall:>7.3f} {cpu:>6.3f} {parts}", flush=True)
        for on in (True, False):
            walls, cpus = zip(*seen[on], strict=True)
            print(
                f"median, archive {'on' if on else 'off'}: wall {statistics.median(walls):.3f} s, "
                f"cpu {statistics.median(cpus):.3f} s"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
