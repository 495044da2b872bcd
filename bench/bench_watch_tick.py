"""Benchmark: one watcher tick with one appended line, at 300 MB and at 10 GB of sessions.

The watcher's tick imports only the paths its file-system events name; the tick it
replaces looked at every file under the roots (a full rescan: list every folder,
stat every file, then catch search and usage up). Both are timed here, in this
process, already started, each after one real line is appended to one session:

- "tick, the named file": `watch_tick` with the appended file named (what an event
  brings), the import of that line, search and usage catching up with its session;
- "full-rescan tick": the pass over every file the watcher made on every tick before;
- baseline, same run: `os.stat` of the one file (the least any tick can do).

The corpus is made cheaply and honestly for what a tick reads: one generated session
file of `--file-kb` (real turns of a fixture session), imported for real, then hard
links of it under fresh session ids spread over 100 project folders until the corpus
holds `--sizes` MB, each with its own session row whose import state (size, mtime,
inode) matches the file, as an earlier import leaves it. Hard links take no disk
space; the session rows make the index as big, in sessions, as the real corpus (their
records are left out: no tick reads them). The default file size, 350 KB, is the
measured average of docs/scaling.md (2,872 files per GB). The links are deleted at
the end.

    .venv/bin/python bench/bench_watch_tick.py [--sizes 300 10000] [--ticks 7] [--postgres]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import long_session  # noqa: E402 (needs the path above)

MB = 1_000_000
PROJECTS = 100
PG_NAME = f"bench_watch_tick_{os.getpid()}"


def _setup(data_dir: Path, postgres: str | None) -> None:
    """Django on a fresh database: SQLite in `data_dir`, or PostgreSQL `postgres` (a URL)."""
    os.environ["BRANCHBOARD_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "branchboard.settings")
    if postgres:
        import psycopg

        admin = postgres.replace("postgres://", "postgresql://", 1)
        name = PG_NAME
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
        os.environ["DATABASE_URL"] = postgres.rsplit("/", 1)[0] + "/" + name
    else:
        os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _drop(postgres: str | None) -> None:
    if not postgres:
        return
    from django.db import connections

    connections.close_all()
    import psycopg

    with psycopg.connect(postgres.replace("postgres://", "postgresql://", 1), autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {PG_NAME} WITH (FORCE)")


def _session(folder: Path, size: int) -> Path:
    """A generated session cut, at a line's end, to about `size` bytes."""
    path, _lines = long_session(folder, target_bytes=size)
    data = path.read_bytes()
    path.write_bytes(data[: data.rfind(b"\n", 0, size) + 1] or data)
    return path


def _append_line(path: Path) -> None:
    """One prompt continuing the last record, appended as the CLI appends it."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 65536))
        last = orjson.loads(f.read().splitlines()[-1])
    record = {
        "type": "user",
        "uuid": str(uuid.uuid4()),
        "parentUuid": last["uuid"],
        "sessionId": last["sessionId"],
        "timestamp": "2026-12-31T00:00:00.000Z",
        "cwd": last.get("cwd", "/bench"),
        "message": {"role": "user", "content": "one more line for the watcher"},
    }
    with path.open("ab") as f:
        f.write(orjson.dumps(record) + b"\n")


def _grow(root: Path, template: Path, links: int, made: int) -> int:
    """Hard links of `template` under fresh ids, with session rows as an import leaves them."""
    from sessions_app.formats import flat_layout_agent
    from sessions_app.models import Project, Session

    row = Session.objects.values().get(path=str(template))
    row.pop("id")
    projects: dict[int, int] = {}
    sessions = []
    for n in range(made, made + links):
        folder = root / f"-bench-p{n % PROJECTS}"
        if n % PROJECTS not in projects:
            folder.mkdir(exist_ok=True)
            project, _ = Project.objects.get_or_create(
                folder=str(folder),
                defaults={"agent": flat_layout_agent().name, "root": str(root)},
            )
            projects[n % PROJECTS] = project.pk
        sid = str(uuid.uuid4())
        path = folder / f"{sid}.jsonl"
        os.link(template, path)
        fields = {**row, "path": str(path), "session_id": sid, "project_id": projects[n % PROJECTS]}
        sessions.append(Session(**fields))
        if len(sessions) >= 2000:
            Session.objects.bulk_create(sessions)
            sessions.clear()
    Session.objects.bulk_create(sessions)
    return made + links


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 10000], help="corpus MB")
    parser.add_argument("--file-kb", type=int, default=350, help="size of each session file")
    parser.add_argument("--ticks", type=int, default=7, help="ticks timed per size and way")
    parser.add_argument(
        "--postgres", metavar="URL", help="PostgreSQL: a server's database to connect first"
    )
    parser.add_argument("--keep", action="store_true", help="keep the corpus folder")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    root = work / "root"
    root.mkdir()
    try:
        _setup(work / "data", args.postgres)
        _measure(root, args)
    finally:
        _drop(args.postgres)
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work)  # the links: the 10 GB is only names, but many


def _measure(root: Path, args: argparse.Namespace) -> None:
    """Make the corpus size by size, and time both ticks at each."""
    from sessions_app.services import watching
    from sessions_app.services.importing import sessions_import
    from sessions_app.services.searching import search_refresh
    from sessions_app.services.usage import usage_refresh

    logging_quiet()
    template = _session(root / "-bench-template", args.file_kb * 1000)
    live = _session(root / "-bench-live", args.file_kb * 1000)
    sessions_import(roots=[root])
    search_refresh()
    usage_refresh()
    size = template.stat().st_size
    made = 0
    print(f"database: {'PostgreSQL' if args.postgres else 'SQLite'}; one file {size / 1000:.0f} KB")
    print(
        f"{'corpus':>9} {'files':>7} {'stat of the file':>17} {'tick, the named file':>21} "
        f"{'full-rescan tick':>17} {'ratio':>7}"
    )
    results = []
    for mb in sorted(args.sizes):
        want = max(0, mb * MB // size - 2)
        made = _grow(root, template, want - made, made) if want > made else made
        files = made + 2
        reported: set[str] = set()
        retry = watching.Retry()
        rescan = watching.Rescan(every=3600.0, at=time.monotonic() + 3600)
        watching.import_pass([root], reported)  # as the watch leaves it: everything current
        base, named, full = [], [], []
        for _ in range(args.ticks):
            start = time.perf_counter()
            os.stat(live)
            base.append(time.perf_counter() - start)
            _append_line(live)
            start = time.perf_counter()
            watching.watch_tick([root], {str(live)}, reported, retry, rescan)
            named.append(time.perf_counter() - start)
            _append_line(live)
            start = time.perf_counter()
            watching.import_pass([root], reported)
            full.append(time.perf_counter() - start)
        assert retry.at is None, "a tick failed"
        row = (mb, files, _median_ms(base), _median_ms(named), _median_ms(full))
        results.append(row)
        print(
            f"{mb:>6} MB {files:>7} {row[2]:>14.3f} ms {row[3]:>18.1f} ms "
            f"{row[4]:>14.1f} ms {row[4] / row[3]:>6.0f}x"
        )
    if len(results) > 1:
        small, large = results[0], results[-1]
        print(
            f"tick, the named file, at {large[0]} MB vs {small[0]} MB: "
            f"{large[3] / small[3]:.2f}x (full-rescan tick: {large[4] / small[4]:.1f}x)"
        )


def logging_quiet() -> None:
    """The importer logs a line per pass that imported something: not wanted in the table."""
    import logging

    logging.getLogger("branchboard.importer").setLevel(logging.WARNING)


if __name__ == "__main__":
    main()
