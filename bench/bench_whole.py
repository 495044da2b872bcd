"""Benchmark: the whole import as a new user waits for it, beside agentsview, and the first page.

In one run, on one generated corpus (copies of the real fixture sessions, see
bench/corpus.py) laid out in a temporary home as the CLIs lay it out
(`~/.claude/projects`, `~/.qwen/projects`):

1. baseline: reading every line and `orjson.loads`-ing it;
2. `manage.py import_sessions --no-progress` on a fresh database: records, search and
   usage, the whole command (wall seconds and the peak RSS of its process), `--repeat` times;
3. the same for agentsview's `sync` (a Go binary, SQLite FTS5), when it is on the machine
   (`agentsview` on PATH, or `--agentsview PATH`; `pip install agentsview==0.46.1`
   installs it), with its own fresh data folder each time;
4. `make run` from a fresh data folder: seconds until its first page answers (what a new
   user waits for before seeing anything), and until the import it starts is whole.

Every figure is printed with the baseline of the same run, because absolute times on a
shared machine are noise.

The interpreter matters: CPython built without profile-guided optimisation (pyenv's
default) runs the import's Python about twice as slowly as a distribution's or
python.org's build. Each interpreter is named with whether it was built with
`--enable-optimizations`; `--python PATH` (again for more) times the same command with
another interpreter whose environment has branchboard installed, in the same run.

    .venv/bin/python bench/bench_whole.py [--size-mb 99] [--repeat 3] [--postgres]
        [--agentsview PATH] [--python PATH] [--no-first-page] [--tmpdir /tmp] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import fresh_database, replicated_corpus  # noqa: E402 (needs the path above)

MB = 1_000_000
PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH_DB = f"bench_whole_{os.getpid()}"
FIRST_PAGE_TARGET = 5.0  # seconds, issue 28 (a)


def make_home(tmp: Path, size_mb: float) -> tuple[Path, int, int]:
    """A home folder holding a generated corpus where Claude Code and Qwen Code keep theirs."""
    home = tmp / "home"
    staging = tmp / "staging"
    files, written = replicated_corpus(staging, target_bytes=int(size_mb * MB))
    claude = home / ".claude" / "projects"
    qwen = home / ".qwen" / "projects"
    claude.mkdir(parents=True)
    qwen.mkdir(parents=True)
    for project in sorted(staging.iterdir()):
        target = qwen if (project / "chats").is_dir() else claude
        project.rename(target / project.name)
    staging.rmdir()
    return home, files, written


def baseline_seconds(home: Path) -> float:
    """Read every line of every session file and `orjson.loads` it."""
    start = time.perf_counter()
    for path in home.rglob("*.jsonl"):
        with path.open("rb") as f:
            for line in f:
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
    return time.perf_counter() - start


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Run `cmd`; (wall seconds, peak RSS of that process in MB, its output)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out.decode()[-3000:]}")
    return seconds, usage.ru_maxrss / 1024, out.decode(errors="replace")


def interpreter(python: str) -> str:
    """`python`'s version, and whether it was built with profile-guided optimisation."""
    code = (
        "import sys, sysconfig; opts = sysconfig.get_config_var('CONFIG_ARGS') or ''; "
        "print(sys.version.split()[0], '--enable-optimizations' in opts)"
    )
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"--python {python}: not a Python that runs ({exc})") from exc
    version, optimised = done.stdout.split()
    return f"Python {version}, {'built with' if optimised == 'True' else 'without'} PGO"


def branchboard_import(
    home: Path,
    tmp: Path,
    backend: str,
    n: int,
    *,
    archive: bool = True,
    python: str = sys.executable,
) -> tuple[float, float, str, int]:
    """The whole command on a fresh database: (seconds, peak MB, output, archive bytes)."""
    data = tmp / f"bb-data-{backend}-{n}-{int(archive)}-{abs(hash(python))}"
    data.mkdir(mode=0o700)
    with fresh_database(backend, data, PG_URL, PG_BENCH_DB) as env:
        env["HOME"] = str(home)
        env["BRANCHBOARD_ARCHIVE"] = "1" if archive else "0"
        env.pop("BRANCHBOARD_ROOTS", None)
        # Migrations are the same for any corpus: made first, outside the timed command.
        subprocess.run([python, "manage.py", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True)
        cmd = [python, "manage.py", "import_sessions", "--no-progress"]
        seconds, rss, out = timed(cmd, env, ROOT)
        size = _archive_bytes(env)
        if backend == "sqlite" and archive and n == 0 and python == sys.executable:
            FLOOR.update(fts_floor(data / "branchboard.sqlite3", tmp))
    shutil.rmtree(data, ignore_errors=True)
    return seconds, rss, out, size


# The search index's floor, measured on the first SQLite import's own texts.
FLOOR: dict[str, float] = {}


def fts_floor(database: Path, tmp: Path) -> dict[str, float]:
    """Seconds a bare FTS5 trigram table takes to index the texts that import stored.

    The same texts, the same batches of 2,000 (services/searching), into a fresh table
    of its own with nothing else in the transaction: what the whole import's search pass
    cannot go under while it promises substrings of any length (a word index such as
    agentsview's FTS5 `unicode61` cannot find `parse_line(` inside `self.parse_line(x)`).
    Beside it, `unicode61` on the same texts: what a word index costs.
    """
    with sqlite3.connect(database) as source:
        texts = source.execute(
            "SELECT id, text FROM sessions_app_searchtext ORDER BY id"
        ).fetchall()
    out: dict[str, float] = {"text_mb": sum(len(t.encode()) for _, t in texts) / MB}
    for name, tokenize in (("trigram", "trigram"), ("unicode61", "unicode61")):
        path = tmp / f"floor-{name}.sqlite3"
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT)")
            db.execute(
                "CREATE VIRTUAL TABLE f USING fts5("
                f"text, content='t', content_rowid='id', tokenize='{tokenize}')"
            )
            db.executemany("INSERT INTO t VALUES (?, ?)", texts)
            start = time.perf_counter()
            db.execute("BEGIN")
            for i in range(0, len(texts), 2000):
                batch = texts[i : i + 2000]
                db.execute(
                    "INSERT INTO f(rowid, text) SELECT id, text FROM t WHERE id BETWEEN ? AND ?",
                    [batch[0][0], batch[-1][0]],
                )
            db.execute("COMMIT")
            out[name] = time.perf_counter() - start
        finally:
            db.close()
            path.unlink(missing_ok=True)
    return out


def _archive_bytes(env: dict[str, str]) -> int:
    """The compressed bytes the archive holds in that database."""
    code = (
        "import django; django.setup(); "
        "from django.db.models import Sum; from django.db.models.functions import Length; "
        "from sessions_app.models.archive import ArchivePiece; "
        "print(ArchivePiece.objects.aggregate(n=Sum(Length('data')))['n'] or 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )
    return int(done.stdout.strip() or 0) if done.returncode == 0 else -1


def agentsview_sync(binary: str, home: Path, tmp: Path, n: int) -> tuple[float, float, str]:
    """agentsview's one-shot offline sync on its own fresh data folder, the same sessions."""
    data = home / ".agentsview"
    shutil.rmtree(data, ignore_errors=True)
    env = dict(os.environ, HOME=str(home), AGENTSVIEW_NO_DAEMON="1")
    result = timed([binary, "sync"], env, tmp)
    if n == 0:
        FLOOR["peer_text_mb"] = _peer_text_mb(data / "sessions.db")
    shutil.rmtree(data, ignore_errors=True)
    return result


def _peer_text_mb(database: Path) -> float:
    """MB of text agentsview's search index (FTS5 `porter unicode61`) holds; -1 if unknown."""
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            row = db.execute(
                "SELECT SUM(LENGTH(CAST(content AS BLOB)) + LENGTH(CAST(rendered AS BLOB))) "
                "FROM message_search_content"
            ).fetchone()
    except sqlite3.Error:
        return -1.0
    return (row[0] or 0) / MB


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(url: str, data: Path) -> urllib.request.Request:
    """A GET with the owner token `make run` made in `data` (none yet: no header)."""
    token = data / "owner_token"
    headers = {"Authorization": f"Bearer {token.read_text().strip()}"} if token.exists() else {}
    return urllib.request.Request(url, headers=headers)


def _answers(url: urllib.request.Request) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def first_page(home: Path, tmp: Path, deadline: float) -> tuple[float | None, float | None]:
    """`make run` on a fresh data folder: (seconds to the first page, seconds to the import).

    The import is whole when `/api/import-status` (if the app has it) says so, else when
    the first page answers (the import ran before the server).
    """
    data = tmp / "run-data"
    port = _free_port()
    env = dict(os.environ, HOME=str(home), BRANCHBOARD_DATA_DIR=str(data), PORT=str(port))
    env.pop("BRANCHBOARD_ROOTS", None)
    env.pop("DATABASE_URL", None)
    # The venv exists already; `make run` would only check it.
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["make", "-s", "run", f"PORT={port}"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    page = whole = None
    try:
        url = f"http://127.0.0.1:{port}/"
        while time.perf_counter() - start < deadline:
            if page is None and _answers(_as_owner(url, data)):
                page = time.perf_counter() - start
            if page is not None:
                status = _import_status(
                    _as_owner(f"http://127.0.0.1:{port}/import-status.json", data)
                )
                if status is None or status:
                    whole = time.perf_counter() - start
                    break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)
    return page, whole


def _import_status(url: urllib.request.Request) -> bool | None:
    """Whether the background import is whole; None if the app does not say."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(orjson.loads(response.read()).get("whole"))
    except urllib.error.HTTPError as exc:
        return None if exc.code == 404 else False
    except (urllib.error.URLError, OSError, orjson.JSONDecodeError):
        return False


def _agentsview() -> str | None:
    """agentsview on PATH, else the copy `make bench` installs in .cache/bench-tools."""
    kept = ROOT / ".cache" / "bench-tools" / "bin" / "agentsview"
    return shutil.which("agentsview") or (str(kept) if kept.exists() else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=99.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", action="store_true", help="also import into PostgreSQL")
    parser.add_argument("--agentsview", default=_agentsview())
    parser.add_argument(
        "--python", action="append", default=[], help="another interpreter to time (its venv's)"
    )
    parser.add_argument("--no-first-page", action="store_true")
    parser.add_argument("--tmpdir", default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-whole-", dir=args.tmpdir))
    try:
        home, files, written = make_home(tmp, args.size_mb)
        mb = written / MB
        print(f"corpus: {files} session files, {mb:.1f} MB (in {home})")
        print(f"interpreter: {sys.executable} ({interpreter(sys.executable)})")
        # Each named by its interpreter and the environment it runs in (`<venv>/bin/python`).
        others = {
            python: f"{interpreter(python)}, {Path(python).parent.parent.name}"
            for python in args.python
        }
        for python, label in others.items():
            print(f"also timed: {python} ({label})")
        base = min(baseline_seconds(home) for _ in range(2))
        print(f"baseline read + orjson.loads: {base:.2f} s ({mb / base:.0f} MB/s)")

        rows: list[tuple[str, list[float], list[float]]] = []
        backends = ["sqlite", "postgresql"] if args.postgres else ["sqlite"]
        archived = 0
        for n in range(args.repeat):
            for backend in backends:
                seconds, rss, out, archived = branchboard_import(home, tmp, backend, n)
                if n == 0:
                    print(f"branchboard import_sessions ({backend}) said:")
                    print("  " + "\n  ".join(out.strip().splitlines()[-6:]))
                _add(rows, f"branchboard import_sessions, {backend}", seconds, rss)
            seconds, rss, _, _ = branchboard_import(home, tmp, "sqlite", n, archive=False)
            _add(rows, "branchboard import_sessions, sqlite, archive off", seconds, rss)
            for python, label in others.items():
                seconds, rss, _, _ = branchboard_import(home, tmp, "sqlite", n, python=python)
                _add(rows, f"  the same, sqlite, {label}", seconds, rss)
            if args.agentsview:
                seconds, rss, out = agentsview_sync(args.agentsview, home, tmp, n)
                if n == 0:
                    print("agentsview sync said: " + " / ".join(out.strip().splitlines()[-3:]))
                _add(rows, "agentsview 0.46.1 sync (SQLite)", seconds, rss)
        if not args.agentsview:
            print("agentsview: not on this machine (pip install agentsview==0.46.1), not compared")

        print()
        print(
            f"{'whole import':50} {'median s':>9} {'min s':>7} {'max s':>7} {'MB/s':>6} "
            f"{'x baseline':>10} {'peak MB':>8}"
        )
        medians: dict[str, float] = {}
        for name, times, rss in rows:
            med = statistics.median(times)
            medians[name] = med
            print(
                f"{name:50} {med:9.2f} {min(times):7.2f} {max(times):7.2f} {mb / med:6.1f} "
                f"{med / base:10.1f} {max(rss):8.0f}"
            )
        off = medians.get("branchboard import_sessions, sqlite, archive off")
        on = medians.get("branchboard import_sessions, sqlite")
        if off and on:
            print(
                f"archive: {archived / 1e6:.1f} MB for {mb:.1f} MB of sessions "
                f"({archived / written:.2f} MB per transcript MB); it adds "
                f"{on - off:+.2f} s to the whole import ({(on - off) / off * 100:+.0f}%)"
            )
        peer = medians.get("agentsview 0.46.1 sync (SQLite)")
        if peer:
            for backend in backends:
                ours = medians[f"branchboard import_sessions, {backend}"]
                print(
                    f"whole import vs agentsview ({backend}): {peer / ours:.2f}x as fast "
                    f"(target >= 1, goal 2)"
                )
            for label in others.values():
                ours = medians[f"  the same, sqlite, {label}"]
                print(f"whole import vs agentsview (sqlite, {label}): {peer / ours:.2f}x as fast")
        if FLOOR:
            print(
                f"floor: a bare FTS5 trigram index of the same {FLOOR['text_mb']:.1f} MB of "
                f"texts takes {FLOOR['trigram']:.2f} s alone"
                + (f" ({FLOOR['trigram'] / peer:.2f}x agentsview's whole sync)" if peer else "")
                + f"; FTS5 unicode61 (words only) {FLOOR['unicode61']:.2f} s; "
                f"read + orjson.loads {base:.2f} s"
            )
        if FLOOR.get("peer_text_mb", -1) >= 0:
            print(
                f"indexed for search: branchboard {FLOOR.get('text_mb', 0):.1f} MB of texts "
                "(prompts, replies, tool inputs and outputs: substrings of any length), "
                f"agentsview {FLOOR['peer_text_mb']:.1f} MB (messages' words)"
            )

        if not args.no_first_page:
            page, whole = first_page(home, tmp, deadline=600)
            if page is None:
                print("make run first page: no answer within 600 s")
            else:
                met = "met" if page <= FIRST_PAGE_TARGET else "NOT met"
                print(
                    f"make run first page: {page:.2f} s (target <= {FIRST_PAGE_TARGET:.0f} s: "
                    f"{met}); import whole after {whole if whole is None else round(whole, 2)} s"
                )
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _add(rows: list[tuple[str, list[float], list[float]]], name: str, s: float, rss: float) -> None:
    for row_name, times, peaks in rows:
        if row_name == name:
            times.append(s)
            peaks.append(rss)
            return
    rows.append((name, [s], [rss]))


if __name__ == "__main__":
    main()
