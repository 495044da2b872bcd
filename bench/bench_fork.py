"""Benchmark: a fork of a large session next to `cp` + `sync` of the same file, in one run.

For each size it generates one long Claude Code session (real turns of a fixture
session chained with fresh uuids, time moving forward), imports it, and then, in
turns, measures the baseline (`cp` of the file, then `sync` of the copy: the same
bytes made durable) and the action: a branch of the whole session and a fork at
its middle turn, each through the service (`session_fork` in a fresh process,
timed around the call) and through the command line (`manage.py fork_session`,
wall time less the same command's start-up, the fastest of three refused runs, and
whole, start-up included: `+startup`). Each
action's time is divided by the baseline measured next to it; every run counts.

    .venv/bin/python bench/bench_fork.py [--sizes 3,30,300] [--runs 3] [--keep]

The database is a fresh SQLite one in a temporary data folder, or the one
DATABASE_URL names (e.g. a scratch PostgreSQL database).
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

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import django_setup  # noqa: E402 (needs the path above)

FIXTURE = (
    ROOT
    / "tests/fixtures/cli/claude/-home-dev-code-bigrepo/ad8024e4-83f0-4ff3-82f8-4e19f6c9127b.jsonl"
)
ID_KEYS = ("uuid", "parentUuid", "logicalParentUuid", "leafUuid", "messageId")


def _time(record: dict) -> datetime | None:
    value = record.get("timestamp")
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def generate(folder: Path, *, target_bytes: int) -> tuple[Path, int]:
    """One session of about `target_bytes`: copies of the fixture's turns, chained.

    Every copy gets fresh uuids (and ids that point at them), its first record
    continues the previous copy's last one, and its times move on by the
    fixture's span, so the file is one long conversation the CLI would resume.
    """
    sid = str(uuid.uuid4())
    template = [orjson.loads(line) for line in FIXTURE.read_bytes().splitlines()]
    times = [_time(r) for r in template]
    known = [t for t in times if t is not None]
    span = max(known) - min(known) + timedelta(seconds=1)
    with_uuid = [r for r in template if r.get("uuid")]
    first, last = with_uuid[0], with_uuid[-1]["uuid"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    written = lines = copy = 0
    tail: str | None = None
    with path.open("wb", buffering=1 << 20) as out:
        while written < target_bytes:
            ids: dict[str, str] = {}
            for record, at in zip(template, times, strict=True):
                fresh = dict(record)
                for key in ID_KEYS:
                    value = fresh.get(key)
                    if isinstance(value, str) and value:
                        fresh[key] = ids.setdefault(value, str(uuid.uuid4()))
                if "sessionId" in fresh:
                    fresh["sessionId"] = sid
                if record is first and tail:
                    fresh["parentUuid"] = tail
                if at is not None:
                    stamp = (at + span * copy).isoformat(timespec="milliseconds")
                    fresh["timestamp"] = stamp.replace("+00:00", "Z")
                data = orjson.dumps(fresh) + b"\n"
                out.write(data)
                written += len(data)
                lines += 1
            tail = ids[last]
            copy += 1
    return path, lines


def child_fork(data_dir: Path, session_id: str, turn: int | None) -> None:
    """One fork through the service, timed around the call; prints JSON."""
    django_setup(data_dir)
    from sessions_app.models import Session
    from sessions_app.services.branching import session_fork

    session = Session.objects.select_related("project").get(session_id=session_id)
    start = time.perf_counter()
    new = session_fork(session=session, turn=turn)
    spent = time.perf_counter() - start
    print(json.dumps({"seconds": spent, "session_id": str(new.session_id)}))


def _run(command: list[str], *, env: dict, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    spent = time.perf_counter() - start
    if done.returncode not in ok:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-2000:]}")
    return spent, done.stdout


def cp_sync(path: Path, scratch: Path) -> float:
    """The baseline: `cp` of the session file, then `sync` of the copy (fsync)."""
    target = scratch / "cp-baseline.jsonl"
    start = time.perf_counter()
    subprocess.run(["cp", str(path), str(target)], check=True)
    subprocess.run(["sync", str(target)], check=True)
    spent = time.perf_counter() - start
    target.unlink()
    return spent


def registration_floor(session_pk: int) -> float:
    """Seconds to register a branch's rows alone: read them, then INSERT ... SELECT them.

    What a branch costs beyond its copy when one `Record` row per line is written
    for it and nothing else is done (no restamp, no read-back, no session row);
    the insert is rolled back.
    """
    from django.db import connection, transaction

    from sessions_app.models import Record, Session
    from sessions_app.services.branching.copying import ROW_COLUMNS
    from sessions_app.services.importing import RECORD_COLUMNS

    table = Record._meta.db_table
    source = Session.objects.get(pk=session_pk)
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {ROW_COLUMNS} FROM {table} WHERE session_id = %s ORDER BY line",
            [session_pk],
        )
        while cursor.fetchmany(5_000):
            pass
    with transaction.atomic():
        scratch = Session.objects.create(
            project_id=source.project_id,
            session_id=uuid.uuid4(),
            path=f"{source.path}.floor",
            agent=source.agent,
        )
        rest = ", ".join(RECORD_COLUMNS[1:])
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (session_id, {rest}) "
                f"SELECT %s, {rest} FROM {table} WHERE session_id = %s",
                [scratch.pk, session_pk],
            )
        spent = time.perf_counter() - start
        transaction.set_rollback(True)
    return spent


def _remove_forks(source_pk: int) -> None:
    from sessions_app.models import Session

    for new in Session.objects.filter(parent_id=source_pk):
        Path(new.path).unlink(missing_ok=True)
        new.delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,30,300", help="session sizes in MB")
    parser.add_argument("--runs", type=int, default=3, help="runs of each action")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bb-bench-fork-"))
    data_dir = work / "data"
    django_setup(data_dir)
    env = {**os.environ, "BRANCHBOARD_DATA_DIR": str(data_dir)}
    env.setdefault("DJANGO_SETTINGS_MODULE", "branchboard.settings")
    manage = [sys.executable, str(ROOT / "manage.py")]

    from django.db import connection

    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    print(f"database: {connection.vendor}; runs: {args.runs}; every run against its own cp+sync")
    header = (
        f"{'session':>8} {'turns':>6} {'action':<16} {'via':<8} {'run':>3} "
        f"{'cp+sync s':>9} {'fork s':>7} {'ratio':>6}"
    )
    print(header)
    worst: dict[tuple[float, str, str], float] = {}
    runs: dict[tuple[float, str, str], list[tuple[float, float]]] = {}
    floors: list[tuple[float, int, float, float]] = []
    try:
        for size in [float(s) for s in args.sizes.split(",")]:
            root = work / f"root{size:g}"
            path, _lines = generate(root / "-work-bench", target_bytes=int(size * 1_000_000))
            old = time.time() - 60
            os.utime(path, (old, old))
            sessions_import(roots=[root])
            session = Session.objects.get(path=str(path))
            sid = str(session.session_id)
            mb = path.stat().st_size / 1e6
            middle = max(1, session.turn_count // 2)
            for _run_n in range(args.runs):
                connection.close()
                floors.append(
                    (mb, session.record_count, cp_sync(path, work), registration_floor(session.pk))
                )
            actions = (("branch (whole)", []), (f"fork at {middle}", ["--turn", str(middle)]))
            for label, extra in actions:
                for run in range(1, args.runs + 1):
                    connection.close()
                    base = cp_sync(path, work)
                    child = [sys.executable, __file__, "--child", str(data_dir), sid, *extra[1:]]
                    _, out = _run(child, env=env)
                    spent = json.loads(out.strip().splitlines()[-1])["seconds"]
                    _remove_forks(session.pk)
                    rows = [("service", base, spent)]
                    # The command line, as the user waits for it (`+startup`: the whole
                    # command with its start-up) and beyond its start-up (`command`: less
                    # the fastest of three refused runs that set up Django, open the
                    # database and look a session up; one refused run was noisier than a
                    # small fork and gave negative figures).
                    base = cp_sync(path, work)
                    startup = min(
                        _run([*manage, "fork_session", str(uuid.uuid4())], env=env, ok=(3,))[0]
                        for _ in range(3)
                    )
                    wall, _ = _run([*manage, "fork_session", sid, *extra], env=env)
                    _remove_forks(session.pk)
                    rows.append(("command", base, max(wall - startup, 0.0)))
                    rows.append(("+startup", base, wall))
                    print(f"  start-up of the command (fastest of 3): {startup:.3f} s", flush=True)
                    for via, base_s, fork_s in rows:
                        ratio = fork_s / base_s
                        key = (mb, label, via)
                        worst[key] = max(worst.get(key, 0.0), ratio)
                        runs.setdefault(key, []).append((base_s, fork_s))
                        print(
                            f"{mb:>6.0f}MB {session.turn_count:>6} {label:<16} {via:<8} "
                            f"{run:>3} {base_s:>9.3f} {fork_s:>7.3f} {ratio:>5.2f}x",
                            flush=True,
                        )
            path.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(
        "\nmedians (targets: at 300 MB <= 1 s and <= 5x cp+sync, at 3 MB <= 30 ms), "
        "and the worst ratio of every run:"
    )
    print(
        f"{'session':>8} {'action':<16} {'via':<8} {'cp+sync s':>9} {'fork s':>7} "
        f"{'ratio':>6} {'worst':>6}"
    )
    for (mb, label, via), pairs in runs.items():
        base_m = statistics.median(b for b, _ in pairs)
        fork_m = statistics.median(f for _, f in pairs)
        print(
            f"{mb:>6.0f}MB {label:<16} {via:<8} {base_m:>9.3f} {fork_m:>7.3f} "
            f"{fork_m / base_m:>5.2f}x {worst[(mb, label, via)]:>5.2f}x"
        )
    print(
        "\nfloor of one row per line: a branch's rows registered alone (read, then "
        "INSERT ... SELECT), next to cp+sync; a branch can be no faster than "
        "(cp+sync + rows) / cp+sync"
    )
    print(f"{'session':>8} {'lines':>7} {'cp+sync s':>9} {'registering rows s':>18} {'best':>6}")
    for mb, lines, base, rows_s in floors:
        print(f"{mb:>6.0f}MB {lines:>7} {base:>9.3f} {rows_s:>18.3f} {1 + rows_s / base:>5.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        turn = int(sys.argv[4]) if len(sys.argv) > 4 else None
        child_fork(Path(sys.argv[2]), sys.argv[3], turn)
    else:
        main()
