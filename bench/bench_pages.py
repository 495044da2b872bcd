"""Benchmark: server time and SQL queries of the transcript and sessions pages.

Generates a 5,000-turn session (imported from a real file) and a project with
10,000 sessions (rows, a tenth of them forks of others), plus small versions of
both, and requests each page through Django's test client: the median of several
requests and the number of SQL queries, which must not grow with the size.

Then sessions whose one turn is huge (a 3 MB tool output, a 3 MB assistant
message, 5,000 tool calls): first paint time and size of each, next to a baseline
from the same run, reading the session's lines and `orjson.loads` of each.

    .venv/bin/python bench/bench_pages.py [--turns 5000] [--sessions 10000] [--big-only]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import django_setup, owner_bearer  # noqa: E402 (needs the path above)

REQUESTS = 15


def _measure(client, url: str) -> tuple[float, int, int]:
    """Median server time (ms), SQL queries and bytes of `url`."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm caches once
    times = []
    for _ in range(REQUESTS):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    return statistics.median(times), len(queries), len(response.content)


def _baseline(path: Path) -> float:
    """Median ms to read every line of `path` and `orjson.loads` it: the least a page can do."""
    import orjson

    times = []
    for _ in range(REQUESTS):
        start = time.perf_counter()
        with path.open("rb") as f:
            for line in f:
                orjson.loads(line)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _record(kind: str, sid: str, parent: str | None, content, n: int = 0) -> dict:
    ts = f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    message: dict = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"m{n}", model="claude-bench", usage={"input_tokens": 1})
    return {
        "type": kind,
        "uuid": str(uuid.uuid4()),
        "parentUuid": parent,
        "sessionId": sid,
        "timestamp": ts,
        "cwd": "/work/bench",
        "isSidechain": False,
        "message": message,
    }


def one_turn_session(folder: Path, shape: str, *, size: int = 3_000_000, calls: int = 5000) -> Path:
    """One turn holding a `size` tool output ("output"), message ("message"), or many calls."""
    import orjson

    sid = str(uuid.uuid4())
    line = 'drwxr-xr-x 2 bench bench 4096 Jan  1 00:00 <some/dir> & a "quoted" name\n'
    big = (line * (size // len(line) + 1))[:size]
    prompt = _record("user", sid, None, "Show me everything.")
    records = [prompt]

    def call(n: int, output: str) -> None:
        use = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": f"ls {n}"}}
        records.append(_record("assistant", sid, records[-1]["uuid"], [use], n))
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": output}
        records.append(_record("user", sid, records[-1]["uuid"], [result], n))

    if shape == "output":
        call(0, big)
    elif shape == "calls":
        for n in range(calls):
            call(n, f"file {n}\n" * 5)
    text = big.replace("\n", "\n\n") if shape == "message" else "Done."
    records.append(_record("assistant", sid, records[-1]["uuid"], [{"type": "text", "text": text}]))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _big_turns(work: Path, client) -> list[tuple[str, float, int, int, float]]:
    """First paint of each one-turn session: ms, queries, bytes, and the baseline ms."""
    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    rows = []
    shapes = (
        ("output", "one turn, a 3 MB tool output"),
        ("message", "one turn, a 3 MB assistant message"),
        ("calls", "one turn, 5,000 tool calls"),
    )
    for shape, label in shapes:
        root = work / f"big-{shape}"
        path = one_turn_session(root / "-work-bench", shape)
        sessions_import(roots=[root])
        session = Session.objects.get(path=str(path))
        ms, queries, size = _measure(client, f"/sessions/{session.session_id}/")
        rows.append(
            (f"{label} ({path.stat().st_size / 1e6:.1f} MB)", ms, queries, size, _baseline(path))
        )
    return rows


def _project_with_sessions(root: Path, count: int):
    from django.utils import timezone

    from sessions_app.models import Project, Session
    from sessions_app.services.importing import projects_refresh

    project = Project.objects.create(
        agent="claude", folder=str(root / f"-bench-{count}"), root=str(root)
    )
    now = timezone.now()
    rows = [
        Session(
            project=project,
            session_id=uuid.uuid4(),
            path=str(root / f"-bench-{count}" / f"{n}.jsonl"),
            agent="claude",
            title=f"Session {n}: refactor the parser and add tests",
            first_prompt=f"Session {n}",
            cwd="/work/bench",
            git_branch="main",
            models_used=["claude-bench"],
            turn_count=n % 40,
            record_count=n % 400,
            started_at=now - timezone.timedelta(minutes=n),
            updated_at=now - timezone.timedelta(minutes=n),
        )
        for n in range(count)
    ]
    Session.objects.bulk_create(rows, batch_size=2000)
    sessions = list(Session.objects.filter(project=project).order_by("id").only("id"))
    forks = []
    for n in range(0, count, 10):  # every tenth session is a fork of the one before it
        if n:
            forks.append(
                Session(pk=sessions[n].pk, parent_id=sessions[n - 1].pk, kind="fork", fork_turn=2)
            )
    Session.objects.bulk_update(forks, ["parent", "kind", "fork_turn"], batch_size=2000)
    projects_refresh(project_ids=[project.pk])
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--sessions", type=int, default=10000)
    parser.add_argument("--big-only", action="store_true", help="only the one-turn sessions")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bb-bench-pages-"))
    django_setup(work / "data")
    from django.test import Client

    from bench.corpus import tiny_turns_session
    from sessions_app.models import Session
    from sessions_app.services.importing import sessions_import

    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=owner_bearer())
    rows = []
    big = []
    try:
        big = _big_turns(work, client)
        for turns in () if args.big_only else (args.turns // 10, args.turns):
            root = work / f"turns{turns}"
            path = tiny_turns_session(root / "-work-bench", turns=turns)
            sessions_import(roots=[root])
            session = Session.objects.get(path=str(path))
            ms, queries, size = _measure(client, f"/sessions/{session.session_id}/")
            rows.append((f"transcript, first paint ({turns} turns)", ms, queries, size))
            ms, queries, size = _measure(
                client, f"/sessions/{session.session_id}/?after={turns // 2}"
            )
            rows.append((f"transcript, a later page ({turns} turns)", ms, queries, size))
        for count in () if args.big_only else (args.sessions // 10, args.sessions):
            project = _project_with_sessions(work, count)
            ms, queries, size = _measure(client, f"/projects/{project.pk}/")
            rows.append((f"sessions page ({count} sessions)", ms, queries, size))
            ms, queries, size = _measure(client, _last_page_by_turns(project))
            rows.append((f"sessions page, the last by turns ({count})", ms, queries, size))
        ms, queries, size = _measure(client, "/")
        rows.append(("projects page", ms, queries, size))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'first paint':<46} {'median ms':>10} {'baseline ms':>12} {'queries':>8} {'KB':>7}")
    for label, ms, queries, size, base in big:
        print(f"{label:<46} {ms:>10.1f} {base:>12.1f} {queries:>8} {size / 1024:>7.0f}")
    print("(baseline: reading every line of the session file and orjson.loads of each)")
    print(f"\n{'page':<42} {'median ms':>10} {'queries':>8} {'KB':>7}")
    for label, ms, queries, size in rows:
        print(f"{label:<42} {ms:>10.1f} {queries:>8} {size / 1024:>7.0f}")
    print(f"\n(median of {REQUESTS} requests through Django's test client, SQLite, DEBUG off)")


def _last_page_by_turns(project: Any) -> str:
    """The project's last page sorted by turns, as its "next" links reach it (a cursor)."""
    from sessions_app.models import Session

    ordered = Session.objects.listed().filter(project=project).order_by("-turn_count", "-id")
    n = ordered.count()
    if n <= 50:
        return f"/projects/{project.pk}/?sort=turns"
    before_last = ordered[n - 51]  # the row just before the last page's first
    return f"/projects/{project.pk}/?sort=turns&after={before_last.pk}:{before_last.turn_count}"


if __name__ == "__main__":
    main()
