"""Benchmark: building the search index, its size, and 50 searches over a generated corpus.

In one run, on generated Claude Code sessions in a temporary folder:

0. the corpus: copies of every real Claude Code fixture session (with its subagents
   and forks), each copy with fresh uuids, session ids, message ids, request ids,
   tool-call ids and agent ids (so usage dedupe and search see distinct sessions);
   then 25 made-up identifiers (`zq_frobnicate_7731`, `ENOENT_QX42` ...) planted, each
   in a few sessions, in a turn appended to the active branch: some ONLY in a Bash
   call's input, some ONLY in the tool's output (sometimes deep in a long output);
1. baseline: reading every line of the corpus and `orjson.loads`-ing it (MB/s), in the
   measuring process just before the import;
2. `sessions_import` of the corpus into a fresh database (MB/s of transcript), then
   `search_refresh` (MB/s of transcript, and % of the import rate, its baseline);
3. the index's size per MB of transcript: SQLite, the pages of the FTS5 shadow tables,
   of the text table and of the record index (`dbstat`); PostgreSQL,
   `pg_total_relation_size` of the text table (trigram index on the folded copy,
   the folded copy, TOAST included) and the record index `record_search_text` (after an ANALYZE);
4. 50 fixed queries: common words, the planted identifiers (each must find every
   session it was planted in), "quoted phrases", code fragments and queries with no
   hits; each 1 warm-up + `--repeat` timed runs, the median counting, with the
   default scope and with `everything=True`. Reported: median and p95 (nearest rank)
   of the 50 medians, the 5 slowest, and, as the baseline, a full scan of the texts
   (`instr`/`strpos` of `lower(text)`) for 5 of the identifiers next to the search of
   the same 5. Every query's count of distinct texts (everything=True, not truncated)
   is checked against a scan of all texts in Python (a query of several words finds
   at least the texts holding them all: words spread over a turn are found too);
5. with `--explain N` on PostgreSQL, `EXPLAIN (ANALYZE, BUFFERS)` of the slowest
   statement of each of the N slowest queries, for the closing note.

Every measurement runs in its own subprocess on its own fresh database (SQLite in a
temp folder; with `--postgres` also a `bench_search_<pid>` database created and
dropped next to the one in `--postgres-url`, whose tables are never touched).

    .venv/bin/python bench/bench_search.py [--size-mb 300] [--postgres] [--repeat 5]
        [--tmpdir /tmp] [--keep] [--all-queries] [--explain 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_import import _table, best_baseline  # noqa: E402 (needs the path above)
from bench.corpus import FIXTURES, fresh_database  # noqa: E402

MB = 1_000_000
PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH_DB = f"bench_search_{os.getpid()}"  # two runs at once never share one
TARGETS = {"median": 10.0, "p95": 50.0}  # ms, SQLite at 300 MB
SEED = 20261124

# The planted identifiers: (identifier, where it goes, how it is searched for).
# "tool": only in a Bash call's input; "output": only in the tool's result;
# "deep": only in a long result, kilobytes after its start.
PLANTED: list[tuple[str, str]] = [
    ("zq_frobnicate_7731", "tool"),
    ("ENOENT_QX42", "output"),
    ("xk_parse_blorb_1193", "tool"),
    ("QuuxWidgetFactory9", "output"),
    ("vexl_retry_budget_58", "deep"),
    ("ZZT_FLUX_CAPACITOR_88", "tool"),
    ("mrgl_cache_shard_204", "output"),
    ("frobozz_magic_lamp_17", "deep"),
    ("KPLX_E_TIMEOUT_3391", "tool"),
    ("glorp_index_v9x", "output"),
    ("wibblewobble_qz_606", "tool"),
    ("snarfd_qrv_socket", "deep"),
    ("--no-plugh-4242", "tool"),
    ("libqzx_vortex.so.7", "output"),
    ("ERR_QZ_0x7f3e19", "tool"),
    ("Hyperion-Loader-qv9", "deep"),
    ("/opt/qvrx/bin/snarfd", "tool"),
    ("100%_qzx_done", "output"),
    ("bzorp.yml_stage_3", "tool"),
    ("naïve_qzx_résumé", "output"),
    ("TestQuibbleMatrix_77", "tool"),
    ("qz_tokenize_dwim(", "deep"),
    ("CRUMHORN_7_OVERLOAD", "output"),
    ("yoink_qx.lockfile", "tool"),
    ("splorch_ledger_v2", "deep"),
]
PLANTS_PER_ID = 3
# Three identifiers are searched for in another case than they were written in.
RECASED = {"ENOENT_QX42": "enoent_qx42", "QuuxWidgetFactory9": "QUUXWIDGETFACTORY9"}
RECASED["TestQuibbleMatrix_77"] = "testquibblematrix_77"

QUERIES: list[tuple[str, str]] = [
    *[
        (q, "word")
        for q in ("file", "error", "the", "function", "test", "import", "return", "session")
    ],
    ("component", "word"),
    ("error file", "words"),
    ("test session import", "words"),
    ("build failed", "words"),
    ('"no such file"', "phrase"),
    ('"let me"', "phrase"),
    ('"the file"', "phrase"),
    ('"command not found"', "phrase"),
    ("parse_line(", "code"),
    ("def ", "code"),
    ("self.", "code"),
    ("print(", "code"),
    ("useState(", "code"),
    ("SELECT ", "code"),
    ("xyzzy_nothing_here_123", "none"),
    ('"quantum marmalade overflow"', "none"),
    ("zzqqxxjjvv", "none"),
    *[(RECASED.get(ident, ident), "ident") for ident, _ in PLANTED],
]
SCAN_SAMPLE = [RECASED.get(ident, ident) for ident, _ in PLANTED[:5]]
CATEGORIES = ("word", "words", "phrase", "code", "none", "ident")

# The corpus: every Claude Code fixture session, with its subagents.

UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
TOP_IDS = (
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "leafUuid",
    "messageId",
    "sessionId",
    "session_id",
    "requestSessionId",
    "requestId",
    "requestRef",
    "promptId",
    "sourceToolAssistantUUID",
    "toolUseID",
    "parentToolUseID",
    "agentId",
)


def _fresh(value: str) -> str:
    """A new id shaped like `value`: a uuid for a uuid, else its prefix and new hex."""
    if UUID_RE.match(value):
        return str(uuid.uuid4())
    cut = max(value.rfind("_"), value.rfind("-"))
    head, tail = (value[: cut + 1], value[cut + 1 :]) if cut >= 0 else (value[:1], value[1:])
    return head + (uuid.uuid4().hex * 2)[: max(len(tail), 8)]


class Ids:
    """One copy's mapping of old ids to new: the same old id gets the same new one."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            return value
        new = self.map.get(value)
        if new is None:
            new = self.map[value] = _fresh(value)
        return new

    def remap(self, record: dict) -> dict:
        out = dict(record)
        for key in TOP_IDS:
            if key in out:
                out[key] = self(out[key])
        forked = out.get("forkedFrom")
        if isinstance(forked, dict):
            out["forkedFrom"] = {k: self(v) for k, v in forked.items()}
        snapshot = out.get("snapshot")
        if isinstance(snapshot, dict) and "messageId" in snapshot:
            out["snapshot"] = {**snapshot, "messageId": self(snapshot["messageId"])}
        result = out.get("toolUseResult")
        if isinstance(result, dict) and "agentId" in result:
            out["toolUseResult"] = {**result, "agentId": self(result["agentId"])}
        message = out.get("message")
        if isinstance(message, dict):
            message = dict(message)
            if "id" in message:
                message["id"] = self(message["id"])
            if isinstance(message.get("content"), list):
                message["content"] = [self._block(b) for b in message["content"]]
            out["message"] = message
        return out

    def _block(self, block: Any) -> Any:
        if not isinstance(block, dict):
            return block
        if block.get("type") == "tool_use" and "id" in block:
            return {**block, "id": self(block["id"])}
        if block.get("type") == "tool_result" and "tool_use_id" in block:
            return {**block, "tool_use_id": self(block["tool_use_id"])}
        return block


def _sources() -> dict[Path, list[Path]]:
    """Each Claude Code fixture project folder and its .jsonl files (subagents included)."""
    out: dict[Path, list[Path]] = {}
    for top in ("cli/claude", "public/claude"):
        for project in sorted(p for p in (FIXTURES / top).iterdir() if p.is_dir()):
            out[project] = sorted(project.rglob("*.jsonl"))
    return out


def _target(project: Path, source: Path, ids: Ids, dest: Path) -> Path:
    """Where the copy of `source` goes: new session id, new agent id, same layout."""
    rel = source.relative_to(project)
    if rel.parts[-1].startswith("agent-"):
        name = f"agent-{ids(rel.stem.removeprefix('agent-'))}.jsonl"
    else:
        name = f"{ids(rel.stem)}.jsonl"
    if len(rel.parts) == 1:
        return dest / name
    return dest / ids(rel.parts[0]) / Path(*rel.parts[1:-1]) / name


def generate_corpus(root: Path, target_bytes: int) -> dict[str, Any]:
    """Copies of every Claude Code fixture project until `target_bytes` are written.

    Returns the files written, bytes, and the main session files (planting candidates).
    """
    sources = _sources()
    files = written = copy = 0
    mains: list[str] = []
    while written < target_bytes:
        for project, paths in sources.items():
            if written >= target_bytes:
                break
            ids = Ids()  # shared by the project's files: forks keep their parents' uuids
            dest = root / f"-bench-{project.name}-{copy % 8}"
            for source in paths:
                path = _target(project, source, ids, dest)
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("wb", buffering=1 << 20) as out:
                    for line in source.read_bytes().splitlines():
                        try:
                            record = orjson.loads(line)
                        except orjson.JSONDecodeError:
                            data = line + b"\n"
                        else:
                            data = orjson.dumps(ids.remap(record)) + b"\n"
                        out.write(data)
                        written += len(data)
                files += 1
                if path.parent == dest and not path.name.startswith("agent-"):
                    mains.append(str(path))
        copy += 1
    return {"files": files, "bytes": written, "mains": mains, "copies": copy}


def _tip(path: Path) -> dict | None:
    """The newest conversation record of a main session file (its active leaf's end)."""
    best = None
    for line in path.read_bytes().splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if (
            isinstance(record, dict)
            and record.get("type") in ("user", "assistant")
            and record.get("uuid")
            and not record.get("isSidechain")
            and isinstance(record.get("timestamp"), str)
            and (best is None or record["timestamp"] > best["timestamp"])
        ):
            best = record
    return best


def _log(n: int, rng: random.Random) -> list[str]:
    return [
        f"2026-11-24 10:{i // 60 % 60:02d}:{i % 60:02d} INFO worker[{rng.randint(1, 16)}] "
        f"step {i} of {n}: {rng.randint(100, 999)} items in {rng.randint(1, 90)} ms"
        for i in range(n)
    ]


def _planted_turn(tip: dict, ident: str, where: str, n: int, rng: random.Random) -> list[dict]:
    """An assistant Bash call and its result, after `tip`, holding `ident` as `where` says."""
    when = datetime.fromisoformat(tip["timestamp"].replace("Z", "+00:00")) + timedelta(
        seconds=n + 1
    )
    base = {k: tip[k] for k in ("cwd", "sessionId", "version", "gitBranch", "userType") if k in tip}
    base["isSidechain"] = False
    call_id = f"toolu_bench{uuid.uuid4().hex[:20]}"
    a_uuid, r_uuid = str(uuid.uuid4()), str(uuid.uuid4())
    if where == "tool":
        command = rng.choice(
            [
                f'grep -rn "{ident}" src/ --include=*.py',
                f"cd /srv/app && ./scripts/run.sh --target {ident} --verbose",
                f"export FEATURE_FLAG={ident} && make check",
            ]
        )
        output = rng.choice(["(no output)", "exit status 0", "ok: 3 files changed"])
    else:
        command = rng.choice(["tail -n 400 logs/build.log", "journalctl -u worker -n 300"])
        lines = _log(rng.randint(3, 12) if where == "output" else rng.randint(60, 250), rng)
        at = rng.randint(0, len(lines) - 1) if where == "output" else len(lines) - 2
        lines.insert(at, f"2026-11-24 11:00:00 WARN worker[3] unexpected {ident} while flushing")
        output = "\n".join(lines)
    stamp = (when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]) + "Z"
    call = {
        **base,
        "parentUuid": tip["uuid"],
        "type": "assistant",
        "uuid": a_uuid,
        "timestamp": stamp,
        "requestId": f"req_bench{uuid.uuid4().hex[:16]}",
        "message": {
            "id": f"msg_bench{uuid.uuid4().hex[:16]}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": "Bash",
                    "input": {"command": command, "description": "Look at the run"},
                }
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 40},
        },
    }
    content: Any = output
    if rng.random() < 0.5:
        content = [{"type": "text", "text": output}]
    result = {
        **base,
        "parentUuid": a_uuid,
        "type": "user",
        "uuid": r_uuid,
        "timestamp": stamp,
        "message": {
            "role": "user",
            "content": [
                {"tool_use_id": call_id, "type": "tool_result", "content": content},
            ],
        },
        "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
    }
    return [call, result]


def plant(mains: list[str]) -> dict[str, list[str]]:
    """Each identifier appended, in a turn of its own, to PLANTS_PER_ID sessions.

    Returns the file names each identifier went into.
    """
    rng = random.Random(SEED)
    tips: dict[str, dict | None] = {}

    def tip(path: str) -> dict | None:
        if path not in tips:
            tips[path] = _tip(Path(path))
        return tips[path]

    chosen: dict[str, list[str]] = {}
    turns: dict[str, list[tuple[str, str]]] = {}
    for ident, where in PLANTED:
        paths = list(islice((p for p in rng.sample(mains, len(mains)) if tip(p)), PLANTS_PER_ID))
        chosen[ident] = [Path(p).name for p in paths]
        for p in paths:
            turns.setdefault(p, []).append((ident, where))
    for path, planted in turns.items():
        last = tips[path]
        assert last is not None
        with open(path, "ab") as out:
            for n, (ident, where) in enumerate(planted):
                records = _planted_turn(last, ident, where, 2 * n, rng)
                for record in records:
                    out.write(orjson.dumps(record) + b"\n")
                last = records[-1]
    return chosen


# The child side: one fresh process per backend, configured by its environment.


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _index_size() -> dict[str, int]:
    """Bytes of the search index: the words' index, the text table, the record index."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pg_relation_size('search_text_folded_trgm'), "
                "pg_total_relation_size('sessions_app_searchtext'), "
                "pg_relation_size('record_search_text'), pg_database_size(current_database())"
            )
            trgm, table, record, db = cursor.fetchone()
            return {"words": trgm, "texts": table - trgm, "record": record, "db": db}
        # The main file only: the words file is attached read-only (only its filler writes it).
        cursor.execute("PRAGMA main.wal_checkpoint(TRUNCATE)")
        cursor.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")
        sizes = dict(cursor.fetchall())
        # The word index: a file of its own (services.searching.words), with pages of its
        # own size (dbstat's `pgsize` there gives the main file's).
        cursor.execute("PRAGMA words.page_size")
        words_page = cursor.fetchone()[0]
        cursor.execute("SELECT name, COUNT(*) FROM dbstat('words') GROUP BY name")
        words = {name: pages * words_page for name, pages in cursor.fetchall()}
        total = 0
        for schema in ("main", "words"):
            cursor.execute(f"PRAGMA {schema}.page_count")
            pages = cursor.fetchone()[0]
            cursor.execute(f"PRAGMA {schema}.page_size")
            total += pages * cursor.fetchone()[0]
    fts = sum(v for k, v in words.items() if k.startswith("search_fts"))
    texts = sizes.get("sessions_app_searchtext", 0) + sizes.get("unique_search_text_uuid", 0)
    return {"words": fts, "texts": texts, "record": sizes.get("record_search_text", 0)} | {
        "db": total
    }


def _scan_sql() -> str:
    from django.db import connection

    if connection.vendor == "postgresql":
        return (
            "SELECT count(*) FROM sessions_app_searchtext WHERE strpos(lower(text), lower(%s)) > 0"
        )
    return "SELECT count(*) FROM sessions_app_searchtext WHERE instr(lower(text), lower(%s)) > 0"


def _expected_counts(queries: list[list[str]]) -> list[int]:
    """For each query's terms, how many texts hold them all (lower-cased), by a scan in Python."""
    from django.db import connection

    needles = [[t.lower() for t in terms] for terms in queries]
    counts = [0] * len(queries)
    with connection.cursor() as cursor:
        cursor.execute("SELECT text FROM sessions_app_searchtext")
        while rows := cursor.fetchmany(2000):
            for (text,) in rows:
                low = text.lower()
                for i, terms in enumerate(needles):
                    if terms and all(t in low for t in terms):
                        counts[i] += 1
    return counts


def _run_query(text: str, everything: bool, repeat: int) -> tuple[float, Any]:
    from sessions_app.selectors.search import SearchQuery, search

    results = search(SearchQuery(text, everything=everything))  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        results = search(SearchQuery(text, everything=everything))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), results


def child(work: Path) -> dict[str, Any]:
    """Import, index and search in this process; the parent reads the dict as JSON."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "branchboard.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from sessions_app.formats.search_text import query_terms
    from sessions_app.services.importing import sessions_import
    from sessions_app.services.searching import search_refresh

    plan = json.loads((work / "plan.json").read_text())
    root = work / "corpus"
    repeat = plan["repeat"]
    call_command("migrate", verbosity=0)
    base_wall, _cpu, _size = best_baseline(root)
    start = time.perf_counter()
    imported = sessions_import(roots=[root])
    import_s = time.perf_counter() - start
    start = time.perf_counter()
    built = search_refresh()
    build_s = time.perf_counter() - start
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    sizes = _index_size()

    terms = [query_terms(q) for q, _ in QUERIES]
    expected = _expected_counts(terms)
    planted = plan["planted"]
    queries = []
    missed: dict[str, list[str]] = {"default": [], "everything": []}
    problems: list[str] = []
    for (text, category), want in zip(QUERIES, expected, strict=True):
        row: dict[str, Any] = {"q": text, "cat": category, "expected": want}
        for scope, everything in (("default", False), ("everything", True)):
            ms, results = _run_query(text, everything, repeat)
            hits = [h for g in results.groups for h in g.hits]
            row[scope] = ms
            row[f"{scope}_texts"] = results.texts
            row[f"{scope}_sessions"] = len(results.groups)
            row[f"{scope}_truncated"] = results.truncated
            unmarked = [h for h in hits if not h.marks]
            if unmarked:
                problems.append(
                    f"{scope} {text!r}: {len(unmarked)} of {len(hits)} shown hits have no mark"
                    f" in their snippet (e.g. {unmarked[0].part} {unmarked[0].snippet[:80]!r})"
                )
            # Words spread over one turn are found too: more texts than hold every word.
            spread = len(query_terms(text)) > 1
            wrong = results.texts < want if spread else results.texts != want
            if everything and not results.truncated and wrong:
                problems.append(
                    f"everything {text!r}: {results.texts} texts found, a scan finds {want}"
                )
            if category == "ident":
                ident = next(i for i, _ in PLANTED if RECASED.get(i, i) == text)
                where = dict(PLANTED)[ident]
                names = {Path(g.session.path).name for g in results.groups}
                lost = sorted(set(planted[ident]) - names)
                if lost:
                    missed[scope].append(f"{text} ({len(lost)} of {len(planted[ident])})")
                parts = {h.part for h in hits}
                want_part = "tool" if where == "tool" else "output"
                if parts - {want_part}:
                    problems.append(f"{scope} {text!r}: hits in parts {sorted(parts)}")
                if results.texts != len(planted[ident]):
                    problems.append(
                        f"{scope} {text!r}: {results.texts} texts, planted in {len(planted[ident])}"
                    )
        queries.append(row)

    # The baseline: a full scan of the texts for a few identifiers, each once after a warm-up.
    sql = _scan_sql()
    scans = []
    with connection.cursor() as cursor:
        cursor.execute(sql, [SCAN_SAMPLE[0]])
        cursor.fetchone()
        for q in SCAN_SAMPLE:
            start = time.perf_counter()
            cursor.execute(sql, [q])
            cursor.fetchone()
            scans.append((time.perf_counter() - start) * 1000)
    return {
        "baseline": base_wall,
        "import": import_s,
        "records": imported.records,
        "sessions": imported.sessions,
        "import_errors": len(imported.errors),
        "build": build_s,
        "indexed_sessions": built.sessions,
        "lines": built.lines,
        "stored": built.stored,
        "linked": built.linked,
        "text_bytes": built.text_bytes,
        "build_errors": built.errors[:5],
        "build_error_count": len(built.errors),
        "sizes": sizes,
        "queries": queries,
        "missed": missed,
        "problems": problems,
        "scan": statistics.median(scans),
        "scan_search": statistics.median(
            r["default"] for r in queries if r["q"] in set(SCAN_SAMPLE)
        ),
        "plans": _slowest_plans(queries, plan.get("explain", 0)),
    }


def _slowest_plans(queries: list[dict], n: int) -> list[dict]:
    """PostgreSQL: EXPLAIN (ANALYZE, BUFFERS) of the slowest statement of each of the `n`
    slowest queries (default scope), for the closing note; none on SQLite."""
    from django.db import connection

    from sessions_app.selectors.search import SearchQuery, search

    if not n or connection.vendor != "postgresql":
        return []
    out = []
    for row in sorted(queries, key=lambda q: -q["default"])[:n]:
        statements: list[tuple[float, str, Any]] = []

        def timed(execute, sql, params, many, context, statements=statements):
            start = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                statements.append(((time.perf_counter() - start) * 1000, sql, params))

        with connection.execute_wrapper(timed):
            search(SearchQuery(row["q"]))
        ms, sql, params = max(statements, key=lambda s: s[0])
        with connection.cursor() as cursor:
            text = cursor.mogrify(sql, params)
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + text)
            lines = [r[0] for r in cursor.fetchall()]
        out.append({"q": row["q"], "ms": row["default"], "statement_ms": ms, "sql": text})
        out[-1]["plan"] = lines
    return out


# The parent side.


def _run_child(work: Path, env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(work)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        sys.exit(f"child failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _stats(r: dict, scope: str) -> tuple[float, float]:
    times = [q[scope] for q in r["queries"]]
    return statistics.median(times), _percentile(times, 95)


def report(size: int, corpus: dict, results: dict, repeat: int, all_queries: bool = False) -> str:
    """The results as a table, one column per database, then the slowest queries."""
    mb = size / MB
    rows: list[tuple[str, ...]] = [("", *results, "target")]

    def row(label: str, fmt: Callable[[dict], str], target: str = "") -> None:
        rows.append((label, *(fmt(r) for r in results.values()), target))

    ok = {True: "ok", False: "MISSED"}
    n_ids = len(PLANTED)
    row("baseline: read + orjson.loads (MB/s)", lambda r: f"{mb / r['baseline']:.0f}")
    row("import (MB/s)", lambda r: f"{mb / r['import']:.1f}")
    row("import time (s)", lambda r: f"{r['import']:.1f}")
    row(
        "  sessions, records, errors",
        lambda r: f"{r['sessions']}, {r['records']}, {r['import_errors']}",
    )
    row("search_refresh (MB/s of transcript)", lambda r: f"{mb / r['build']:.1f}")
    row("search_refresh time (s)", lambda r: f"{r['build']:.1f}")
    row("  build rate / import rate", lambda r: f"{r['import'] / r['build'] * 100:.0f}%")
    row("  texts stored, copies linked", lambda r: f"{r['stored']}, {r['linked']}")
    row("  text (MB), problems", lambda r: f"{r['text_bytes'] / MB:.1f}, {r['build_error_count']}")
    row("index: words (MB per transcript MB)", lambda r: f"{r['sizes']['words'] / size:.3f}")
    row("index: texts (MB per transcript MB)", lambda r: f"{r['sizes']['texts'] / size:.3f}")
    row("index: record index (MB per MB)", lambda r: f"{r['sizes']['record'] / size:.3f}")
    row(
        "index: total (MB per transcript MB)",
        lambda r: f"{sum(v for k, v in r['sizes'].items() if k != 'db') / size:.3f}",
    )
    row("  total (MB)", lambda r: f"{sum(v for k, v in r['sizes'].items() if k != 'db') / MB:.0f}")
    row("  whole database (MB)", lambda r: f"{r['sizes']['db'] / MB:.0f}")
    for scope in ("default", "everything"):
        row(
            f"{scope}: median of 50 queries (ms)",
            lambda r, s=scope: f"{_stats(r, s)[0]:.1f}",
            "<= 10 ms",
        )
        row(
            f"{scope}: p95 of 50 queries (ms)",
            lambda r, s=scope: f"{_stats(r, s)[1]:.1f}",
            "<= 50 ms",
        )
        row(
            f"  {scope}: identifiers found",
            lambda r, s=scope: f"{n_ids - len(r['missed'][s])}/{n_ids}",
            f"{n_ids}/{n_ids}",
        )
        row(
            "  meets target",
            lambda r, s=scope: ok[
                _stats(r, s)[0] <= TARGETS["median"]
                and _stats(r, s)[1] <= TARGETS["p95"]
                and not r["missed"][s]
            ],
        )
    for cat in CATEGORIES:
        row(
            f"  median, {cat} queries (ms): default / all",
            lambda r, c=cat: "{:.1f} / {:.1f}".format(
                *(
                    statistics.median(q[s] for q in r["queries"] if q["cat"] == c)
                    for s in ("default", "everything")
                )
            ),
        )
    row("baseline: full scan of the texts (ms)", lambda r: f"{r['scan']:.0f}")
    row("  search of the same 5 (ms, default)", lambda r: f"{r['scan_search']:.1f}")
    row("  scan / search", lambda r: f"{r['scan'] / r['scan_search']:.0f}x")
    row("result problems (see below)", lambda r: str(len(r["problems"])), "0")

    head = (
        f"corpus: {corpus['files']} files ({len(corpus['mains'])} main sessions), {mb:.1f} MB; "
        f"{n_ids} identifiers planted in {PLANTS_PER_ID} sessions each; each query 1 warm-up + "
        f"{repeat} timed, its median counts; p95 by nearest rank; targets for SQLite at 300 MB; "
        "index size: SQLite from dbstat pages (FTS5 shadow tables; text table + uuid index; "
        "record index), PostgreSQL from pg_relation_size / pg_total_relation_size after ANALYZE"
    )
    out = [head, "", _table(rows)]
    for backend, r in results.items():
        for scope in ("default", "everything"):
            slow = sorted(r["queries"], key=lambda q, s=scope: -q[s])[:5]
            out.append(f"\n{backend}, {scope}: slowest 5 queries")
            for q in slow:
                out.append(
                    f"  {q[scope]:8.1f} ms  {q['q']!r:32} {q['cat']:6} "
                    f"{q[scope + '_texts']} texts, {q[scope + '_sessions']} sessions"
                    f"{', truncated' if q[scope + '_truncated'] else ''}"
                )
        for scope in ("default", "everything"):
            if r["missed"][scope]:
                out.append(f"\n{backend}, {scope}: MISSED " + ", ".join(r["missed"][scope]))
        if r["problems"]:
            out.append(f"\n{backend}: result problems")
            out.extend(f"  {p}" for p in r["problems"])
        if r["build_errors"]:
            out.append(f"\n{backend}: search_refresh problems (first 5)")
            out.extend(f"  {p}" for p in r["build_errors"])
    for backend, r in results.items():
        for found in r.get("plans", []):
            out.append(
                f"\n{backend}: {found['q']!r} ({found['ms']:.1f} ms), its slowest statement "
                f"({found['statement_ms']:.1f} ms):\n  {found['sql']}"
            )
            out.extend(f"  {line}" for line in found["plan"])
    if all_queries:
        for backend, r in results.items():
            out.append(f"\n{backend}: every query (ms, default / everything; texts found)")
            for q in r["queries"]:
                out.append(
                    f"  {q['default']:8.1f} {q['everything']:8.1f}  {q['q']!r:32} {q['cat']:6} "
                    f"{q['default_texts']} / {q['everything_texts']}"
                )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=300, help="corpus size")
    parser.add_argument("--postgres", action="store_true", help="also measure PostgreSQL")
    parser.add_argument("--postgres-url", default=PG_URL, help="server to create the db on")
    parser.add_argument("--tmpdir", type=Path, default=None, help="where the temp folder goes")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each query")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    parser.add_argument("--all-queries", action="store_true", help="print every query's times")
    parser.add_argument(
        "--explain", type=int, default=0, help="PostgreSQL: plans of the N slowest queries"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bb-bench-search-", dir=args.tmpdir))
    try:
        start = time.perf_counter()
        corpus = generate_corpus(work / "corpus", int(args.size_mb * MB))
        planted = plant(corpus["mains"])
        (work / "plan.json").write_text(
            json.dumps({"planted": planted, "repeat": args.repeat, "explain": args.explain})
        )
        print(f"generated in {time.perf_counter() - start:.1f} s under {work}", flush=True)
        size = sum(p.stat().st_size for p in (work / "corpus").rglob("*.jsonl"))
        results = {}
        for backend in ["sqlite"] + (["postgres"] if args.postgres else []):
            print(f"measuring {backend} ...", flush=True)
            start = time.perf_counter()
            with fresh_database(
                backend, work / f"data-{backend}", args.postgres_url, PG_BENCH_DB
            ) as env:
                results[backend] = _run_child(work, env)
            print(f"  done in {time.perf_counter() - start:.0f} s", flush=True)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(report(size, corpus, results, args.repeat, args.all_queries))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]))))
    else:
        main()
