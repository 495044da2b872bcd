"""Benchmark: what a user waits for at a terminal: `fork_session --help`, and a fork of a
normal (~1 MB) session, each as a whole command (`manage.py`, its start-up included).

With `--against <folder>` (another checkout of the project, e.g. the commit before a
change, made with `git archive`), each command runs alternately from this checkout and
from that one, on the same database, so the two are compared in one run on a shared
machine; medians and the ratio are printed.

    .venv/bin/python bench/bench_startup.py [--size-mb 1] [--runs 7] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_fork import _remove_forks, generate  # noqa: E402
from bench.corpus import django_setup  # noqa: E402


def _wall(command: list[str], *, cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    spent = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-2000:]!r}")
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1, help="session size in MB")
    parser.add_argument("--runs", type=int, default=7, help="runs of each command")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bb-bench-startup-"))
    trees = {"this": ROOT}
    if args.against is not None:
        trees["against"] = args.against.resolve()
    try:
        data_dir = work / "data"
        django_setup(data_dir)
        from sessions_app.models import Session
        from sessions_app.services.importing import sessions_import

        root = work / "root"
        path, _ = generate(root / "-work-bench", target_bytes=int(args.size_mb * 1_000_000))
        old = time.time() - 60
        os.utime(path, (old, old))
        sessions_import(roots=[root])
        session = Session.objects.get(path=str(path))
        env = {**os.environ, "BRANCHBOARD_DATA_DIR": str(data_dir)}
        env["DJANGO_SETTINGS_MODULE"] = "branchboard.settings"
        env.pop("DATABASE_URL", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        times: dict[tuple[str, str], list[float]] = {}
        commands = {
            "fork_session --help": ["fork_session", "--help"],
            f"fork of {path.stat().st_size / 1e6:.1f} MB": [
                "fork_session",
                str(session.session_id),
            ],
        }
        for tree in trees.values():  # compiled once, not timed
            _wall([sys.executable, "manage.py", "fork_session", "--help"], cwd=tree, env=env)
        for _ in range(args.runs):
            for label, argv in commands.items():
                for name, tree in trees.items():
                    spent = _wall([sys.executable, "manage.py", *argv], cwd=tree, env=env)
                    _remove_forks(session.pk)
                    times.setdefault((label, name), []).append(spent)
        print(f"{'command':<24} " + " ".join(f"{n + ' s':>12}" for n in trees) + "   runs")
        for label in commands:
            medians = [statistics.median(times[(label, n)]) for n in trees]
            cells = " ".join(f"{m:>12.3f}" for m in medians)
            ratio = f"  this/against {medians[0] / medians[1]:.2f}" if len(medians) > 1 else ""
            spread = ", ".join(
                f"{n} {min(times[(label, n)]):.2f}-{max(times[(label, n)]):.2f}" for n in trees
            )
            print(f"{label:<24} {cells}   {spread}{ratio}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
