"""Benchmark: forking a large session, next to `cp` of the same file, in one run.

For each size it generates one long Claude Code session from the real fixture
turns, imports it, then in a fresh process per measurement forks it at its middle
turn and branches it whole. Printed: wall time of `cp` (and of a copy that fsyncs,
as the fork does), the fork's time split into writing the new file and importing
it, and the peak RSS of the process next to its RSS before the fork.

    .venv/bin/python bench/bench_fork.py [--sizes 30,300] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import django_setup  # noqa: E402 (needs the path above)


def _rss_mb(field: str = "VmHWM") -> float:
    """This process's peak (VmHWM) or current (VmRSS) resident size, in MB.

    Not ru_maxrss: that one is inherited from the parent across fork and exec.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(data_dir: Path, session_id: str, turn: int | None) -> None:
    """Run one fork and print its figures as JSON (in a fresh process, for RSS)."""
    django_setup(data_dir)
    from sessions_app.models import Session
    from sessions_app.services import branching

    session = Session.objects.select_related("project").get(session_id=session_id)
    before = _rss_mb()
    spent = {"register": 0.0}
    register = branching._register_copy

    def timed_register(*args, **kwargs):
        start = time.perf_counter()
        try:
            return register(*args, **kwargs)
        finally:
            spent["register"] += time.perf_counter() - start

    branching._register_copy = timed_register
    start = time.perf_counter()
    new = branching.session_fork(session=session, turn=turn)
    total = time.perf_counter() - start
    print(
        json.dumps(
            {
                "total": total,
                "write": total - spent["register"],
                "import": spent["register"],
                "rss_before": before,
                "rss_peak": _rss_mb(),
                "bytes": Path(new.path).stat().st_size,
                "turns": new.turn_count,
            }
        )
    )


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def _copy_fsync(src: Path, dst: Path) -> float:
    start = time.perf_counter()
    with src.open("rb") as f, dst.open("wb") as g:
        shutil.copyfileobj(f, g, 1 << 20)
        g.flush()
        os.fsync(g.fileno())
    return time.perf_counter() - start


def _fork(data_dir: Path, session_id: str, turn: int | None) -> dict:
    command = [sys.executable, __file__, "--child", str(data_dir), session_id]
    if turn is not None:
        command.append(str(turn))
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="30,300", help="session sizes in MB, comma separated")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bb-bench-fork-"))
    data_dir = work / "data"
    django_setup(data_dir)

    from bench.corpus import long_session
    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    rows = []
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            root = work / f"root{size}"
            path, lines = long_session(root / "-work-bench", target_bytes=size * 1_000_000)
            old = time.time() - 60
            os.utime(path, (old, old))
            start = time.perf_counter()
            sessions_import(roots=[root])
            imported = time.perf_counter() - start
            session = Session.objects.get(path=str(path))
            mb = path.stat().st_size / 1e6
            cp = min(_timed(["cp", str(path), str(work / "cp.jsonl")]) for _ in range(3))
            cp_sync = min(_copy_fsync(path, work / "cp.jsonl") for _ in range(3))
            (work / "cp.jsonl").unlink()
            middle = max(1, session.turn_count // 2)
            for label, turn in ((f"fork at turn {middle}", middle), ("branch (whole)", None)):
                runs = [_fork(data_dir, str(session.session_id), turn) for _ in range(3)]
                best = min(runs, key=lambda r: r["total"])
                rows.append(
                    (mb, session.turn_count, lines, imported, cp, cp_sync, label, best, runs)
                )
                for new in Session.objects.filter(parent=session):
                    Path(new.path).unlink(missing_ok=True)
                    new.delete()
            path.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(
        f"{'session':>9} {'turns':>6} {'action':<20} {'cp s':>6} {'cp+fsync':>8} "
        f"{'write s':>8} {'register s':>10} {'total s':>8} {'total/cp+fsync':>14} {'RSS before':>10} {'RSS peak':>9}"
    )
    for mb, turns, _lines, _imported, cp, cp_sync, label, best, _runs in rows:
        print(
            f"{mb:>7.0f}MB {turns:>6} {label:<20} {cp:>6.2f} {cp_sync:>8.2f} {best['write']:>8.2f} "
            f"{best['import']:>10.2f} {best['total']:>8.2f} {best['total'] / cp_sync:>7.1f}x "
            f"{best['rss_before']:>8.0f}MB {best['rss_peak']:>7.0f}MB"
        )
    print(
        "\n(best of 3 runs each; write = the new file written, fsynced and linked;"
        " register = its rows and lineage written to the database)"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
    else:
        main()
