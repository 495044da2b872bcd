"""Run every benchmark of issue 12's table in turn and print one summary table.

Each bench runs as its own subprocess (its output is shown as it comes and kept);
then one table gives every row of the issue's table with its figure, the baseline
measured in the same run, their ratio and the target. A bench that is missing,
fails, or prints something this script cannot read is named in the table, and
its output is printed again at the end, so nothing is lost when a bench changes
its format.

    .venv/bin/python bench/run_all.py            # full sizes: 15-25 minutes on 2 cores
    .venv/bin/python bench/run_all.py --quick    # small sizes, 3-5 minutes: proves the run works
    .venv/bin/python bench/run_all.py --only import,scale

Options a bench does not (yet) list in its `--help` are not passed to it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
NUM = r"(-?\d+(?:\.\d+)?)"


@dataclass
class Bench:
    name: str
    script: str
    full: list[str]
    quick: list[str]
    output: str = ""
    status: str = "not run"  # ok, missing, failed (rc), timeout, not run
    seconds: float = 0.0
    parsed: set[str] = field(default_factory=set)


BENCHES = [
    Bench(
        "import",
        "bench_import.py",
        ["--size-mb", "250", "--session-mb", "300", "--postgres"],
        ["--size-mb", "30", "--session-mb", "30", "--postgres"],
    ),
    Bench("append", "bench_append.py", ["--sizes", "3,30,300"], ["--sizes", "3,30"]),
    Bench("fork", "bench_fork.py", ["--sizes", "3,30,300"], ["--sizes", "3,30"]),
    Bench("pages", "bench_pages.py", [], ["--turns", "500", "--sessions", "1000"]),
    Bench("scale", "bench_scale.py", ["--json"], ["--size-mb", "30", "--json"]),
    Bench(
        "whole",
        "bench_whole.py",
        ["--size-mb", "99", "--repeat", "3", "--postgres"],
        ["--size-mb", "20", "--repeat", "1"],
    ),
    Bench("watch", "bench_watch_tick.py", ["--sizes", "300,10000"], ["--sizes", "30,300"]),
    Bench(
        "search_http",
        "bench_search_http.py",
        ["--size-mb", "1000", "--postgres"],
        ["--size-mb", "20", "--postgres", "--repeat", "3"],
    ),
    Bench(
        "hub",
        "bench_hub.py",
        ["--session-mb", "300", "--small-mb", "30", "--machines", "100"],
        ["--quick"],
    ),
]


def _supported(args: list[str], help_text: str) -> tuple[list[str], list[str]]:
    """The options `help_text` lists (each with its values), and those it does not.

    A comma-separated value goes as separate values to an option whose help shows
    `--opt X [X ...]` (argparse's nargs="+").
    """
    kept: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(args):
        option = args[i]
        values = []
        i += 1
        while i < len(args) and not args[i].startswith("--"):
            values.append(args[i])
            i += 1
        known = re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text)
        many = re.search(rf"{re.escape(option)} (\w+) \[\1 \.\.\.\]", help_text)
        if many:
            values = [v for value in values for v in value.split(",")]
        (kept if known else dropped).extend([option, *values])
    return kept, dropped


def run_bench(bench: Bench, *, quick: bool, timeout: float) -> None:
    path = BENCH / bench.script
    print(f"\n===== {bench.name}: {bench.script} =====", flush=True)
    if not path.exists():
        bench.status = "missing"
        print(f"{bench.script} does not exist (yet)", flush=True)
        return
    python = sys.executable
    helped = subprocess.run(
        [python, str(path), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    args, dropped = _supported(bench.quick if quick else bench.full, helped.stdout)
    if dropped:
        print(f"(its --help does not list {' '.join(dropped)}; not passed)", flush=True)
    command = [python, str(path), *args]
    print("$ " + " ".join([Path(python).name, f"bench/{bench.script}", *args]), flush=True)
    start = time.perf_counter()
    lines: list[str] = []
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if not line.startswith("BENCH_JSON "):
                print(line, end="", flush=True)
            lines.append(line)
            if time.perf_counter() - start > timeout:
                raise subprocess.TimeoutExpired(command, timeout)
        rc = process.wait()
        bench.status = "ok" if rc == 0 else f"failed (exit {rc})"
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        bench.status = f"timeout after {timeout:.0f} s"
    bench.seconds = time.perf_counter() - start
    bench.output = "".join(lines)
    print(f"----- {bench.name}: {bench.status} in {bench.seconds:.0f} s", flush=True)


# Parsers: each reads what a bench printed and returns figures, or None when it
# cannot. They look for labels, not positions, and accept the older formats too.


def _line(text: str, pattern: str) -> str | None:
    for line in text.splitlines():
        if re.search(pattern, line, re.IGNORECASE):
            return line
    return None


def _numbers(line: str) -> list[float]:
    return [float(n) for n in re.findall(NUM, line)]


def _columns(text: str) -> list[str]:
    """The column names of bench_import's table (sqlite, postgres), from its header row."""
    for line in text.splitlines():
        words = line.split()
        if "sqlite" in words and set(words) <= {"sqlite", "postgres", "target", "|"}:
            return [w for w in words if w in ("sqlite", "postgres")]
    return []


def parse_import(text: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    columns = _columns(text) or ["sqlite"]
    base = _line(text, r"orjson\.loads")
    rate = _line(text, r"^\s*import\b.*MB/s")
    if base and rate:
        base_n = _numbers(base.split(")", 1)[-1] if "(MB/s)" in base else base)
        rate_n = _numbers(rate.split(")", 1)[-1] if "(MB/s)" in rate else rate)
        for i, column in enumerate(columns):
            if rate_n[i:]:
                # One baseline per column where the bench measures one per database.
                out[column] = {"rate": rate_n[i], "baseline": (base_n[i:] or base_n)[0]}
    floor = _line(text, r"best ratio possible with those rows")
    if floor:
        for column, value in zip(columns, _numbers(floor), strict=False):
            out.setdefault(column, {})["floor"] = value
    unchanged = _line(text, r"per 100 MB") or _line(text, r"nothing changed")
    if unchanged:
        per100 = re.findall(r"(\d+\.\d+)\s*s? per 100 MB", unchanged)
        if per100:
            out["unchanged"] = {columns[0]: float(per100[0])}
        elif (n := _numbers(unchanged.split(")", 1)[-1])) and "per 100" in unchanged:
            out["unchanged"] = dict(zip(columns, n, strict=False))
    size = re.search(r"session:\s*" + NUM + r"\s*MB", text) or re.search(
        r"one session of " + NUM + " MB", text
    )
    peak = _line(text, r"peak RSS")
    before = _line(text, r"RSS after django.setup") or _line(text, r"process before import")
    if peak:
        if "ru_maxrss" in peak or "(MB)" in peak:
            peak_mb = _numbers(peak.split(")", 1)[-1])[0]
            before_mb = _numbers(before.split(")", 1)[-1])[0] if before else None
        else:
            found = re.search(r"peak RSS " + NUM + r" MB.*?" + NUM + " MB", peak)
            peak_mb, before_mb = (float(found[1]), float(found[2])) if found else (None, None)
        if peak_mb is not None:
            out["peak"] = {
                "mb": peak_mb,
                "before": before_mb,
                "size": float(size[1]) if size else None,
            }
    return out or None


UNITS = {"s", "ms", "us", "MB", "KB", "%", "x", "(s)", "(MB)", "(ms)"}
CELL = re.compile(r"(?<![\w.,])-?\d+(?:\.\d+)?(?:x|%|MB|KB|s|ms|us|µs)?(?=\s|$)")


def aligned_rows(text: str, *header_words: str) -> list[tuple[str, dict[str, str]]]:
    """The rows of a right-aligned table whose header line holds `header_words`.

    Each number is filed under the header words above it (a number under blank
    header space, like the 60 of "fork at 60", stays in the row's label). Returns
    (label, {header: number}) per row, up to the first blank line after the rows.
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):  # noqa: B007 (i is used after the loop)
        if all(w in line for w in header_words):
            header = line
            break
    else:
        return []
    words = [(m.start(), m.end(), m[0]) for m in re.finditer(r"\S+", header)]
    rows: list[tuple[str, dict[str, str]]] = []
    for line in lines[i + 1 :]:
        if not line.strip():
            if rows:
                break
            continue
        if set(line.strip()) <= set("- "):
            continue
        cells: dict[str, str] = {}
        label = line
        for m in CELL.finditer(line):
            over = [k for k, (s, e, _w) in enumerate(words) if s < m.end() and e > m.start()]
            if over and all(words[k][2] in UNITS for k in over) and over[0] > 0:
                over.insert(0, over[0] - 1)  # "ms" alone is not a column: "baseline ms" is
            if over and header[m.start() : m.end()].strip():
                cells[" ".join(words[k][2] for k in over)] = m[0]
                label = label[: m.start()] + " " * (m.end() - m.start()) + label[m.end() :]
        if cells:
            rows.append((" ".join(label.split()), cells))
    return rows


def _cell(cells: dict[str, str], *keys: str, avoid: str = "/") -> float | None:
    """The first cell whose header holds one of `keys` (in order of preference)."""
    for key in keys:
        for header, value in cells.items():
            if key in header and avoid not in header:
                return float(re.sub(r"[^\d.\-]", "", value))
    return None


def parse_fork(text: str) -> dict[str, Any] | None:
    """Fork time vs cp + fsync per size, action (and way in), over every run printed."""
    groups: dict[tuple, list[dict[str, float | None]]] = {}
    for label, cells in aligned_rows(text, "action", "ratio") or aligned_rows(text, "action"):
        mb = _cell(cells, "session")
        base = _cell(cells, "cp+sync", "cp+fsync")
        figure = _cell(cells, "total", "fork")
        ratio = next((float(v[:-1]) for v in cells.values() if v.endswith("x")), None)
        if mb is None or base is None or figure is None:
            continue
        groups.setdefault((mb, label), []).append({"base": base, "fig": figure, "ratio": ratio})
    rows = []
    for (mb, label), runs in groups.items():
        ratios = [r["ratio"] if r["ratio"] is not None else r["fig"] / r["base"] for r in runs]
        rows.append(
            {
                "mb": mb,
                "action": label,
                "cp_fsync": statistics.median(r["base"] for r in runs),
                "total": statistics.median(r["fig"] for r in runs),
                "worst": max(ratios),
                "runs": len(runs),
            }
        )
    # The floor per size: its most favourable run (the lowest ratio).
    floors: dict[float, dict[str, float]] = {}
    for _label, cells in aligned_rows(text, "registering", "rows"):
        mb = _cell(cells, "session")
        base = _cell(cells, "cp+sync")
        rows_s = _cell(cells, "rows")
        if mb is None or base is None or rows_s is None:
            continue
        run = {"mb": mb, "cp_fsync": base, "rows_s": rows_s, "best": 1 + rows_s / base}
        if mb not in floors or run["best"] < floors[mb]["best"]:
            floors[mb] = run
    return {"rows": rows, "floor": list(floors.values())} if rows else None


def parse_pages(text: str) -> dict[str, Any] | None:
    """Both tables: first paint of one huge turn (with its baseline), and the pages."""
    rows = {}
    tables = aligned_rows(text, "first paint", "ms") + aligned_rows(text, "page", "median")
    for label, cells in tables:
        ms = _cell(cells, "median", "ms")
        if ms is not None:
            queries = _cell(cells, "quer")
            rows[label] = {
                "ms": ms,
                "baseline": _cell(cells, "baseline"),
                "queries": None if queries is None else int(queries),
                "kb": _cell(cells, "KB"),
            }
    return {"rows": rows} if rows else None


def _seconds(value: str) -> float:
    number = float(re.sub(r"[^\d.\-]", "", value))
    for unit, scale in (("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6)):
        if value.endswith(unit):
            return number * scale
    return number


def parse_append(text: str) -> dict[str, Any] | None:
    """The append time per session size (and the whole-graph way), and the peak memory."""
    rows = []
    for _label, cells in aligned_rows(text, "session", "import"):
        mb = _cell(cells, "session")
        imported = next((v for h, v in cells.items() if h == "import"), None)
        if mb is None or imported is None:
            continue
        base = next((v for h, v in cells.items() if "baseline" in h), None)
        whole = next((v for h, v in cells.items() if "graph" in h or "whole" in h), None)
        rows.append(
            {
                "mb": mb,
                "seconds": _seconds(imported),
                "baseline": _seconds(base) if base else None,
                "whole_graph": _seconds(whole) if whole else None,
            }
        )
    memory = []
    pattern = (
        r"^\s*"
        + NUM
        + r"\s*MB\s+import\s+"
        + NUM
        + r"\s*\(from "
        + NUM
        + r".*?page\s+"
        + NUM
        + r"\s*\(from "
        + NUM
    )
    for line in text.splitlines():
        if m := re.match(pattern, line):
            mb, imp, imp_before, page, page_before = (float(g) for g in m.groups())
            memory.append(
                {
                    "mb": mb,
                    "import": imp,
                    "before": imp_before,
                    "page": page,
                    "page_before": page_before,
                }
            )
    return {"rows": rows, "memory": memory} if rows or memory else None


def parse_scale(text: str) -> dict[str, Any] | None:
    for line in text.splitlines():
        if line.startswith("BENCH_JSON "):
            return json.loads(line[len("BENCH_JSON ") :])
    return None


def parse_whole(text: str) -> dict[str, Any] | None:
    """bench_whole: the whole command beside agentsview, and make run's first page."""
    base = re.search(rf"baseline read \+ orjson\.loads: {NUM} s \({NUM} MB/s\)", text)
    if not base:
        return None
    rows = {}
    for m in re.finditer(
        rf"^(branchboard import_sessions, \w+|agentsview[^\n]*?\(SQLite\))\s+{NUM}\s+{NUM}\s+"
        rf"{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s*$",
        text,
        re.M,
    ):
        rows[m.group(1)] = {
            "median": float(m.group(2)),
            "rate": float(m.group(5)),
            "peak": float(m.group(7)),
        }
    page = re.search(rf"make run first page: {NUM} s", text)
    floor = re.search(
        rf"floor: a bare FTS5 trigram index of the same {NUM} MB of texts takes {NUM} s", text
    )
    peer_text = re.search(rf"agentsview {NUM} MB \(messages' words\)", text)
    archive = re.search(
        rf"archive: {NUM} MB for {NUM} MB of sessions \({NUM} MB per transcript MB\); "
        rf"it adds \+?{NUM} s",
        text,
    )
    return {
        "archive": (float(archive.group(3)), float(archive.group(4))) if archive else None,
        "baseline_s": float(base.group(1)),
        "baseline_rate": float(base.group(2)),
        "rows": rows,
        "first_page": float(page.group(1)) if page else None,
        "floor": (float(floor.group(1)), float(floor.group(2))) if floor else None,
        "peer_text_mb": float(peer_text.group(1)) if peer_text else None,
    }


def parse_watch(text: str) -> dict[str, Any] | None:
    """bench_watch_tick: per corpus size, the tick with the named file, the full rescan."""
    rows = [
        {
            "mb": float(m[1]),
            "files": int(m[2]),
            "stat": float(m[3]),
            "tick": float(m[4]),
            "full": float(m[5]),
        }
        for m in re.finditer(rf"^\s*{NUM} MB\s+(\d+)\s+{NUM} ms\s+{NUM} ms\s+{NUM} ms", text, re.M)
    ]
    return {"rows": rows} if rows else None


def parse_hub(text: str) -> dict[str, Any] | None:
    """bench_hub: its summary rows (what, figure, baseline, ratio, target), as it printed them."""
    for line in text.splitlines():
        if line.startswith("BENCH_JSON "):
            rows = json.loads(line[len("BENCH_JSON ") :]).get("hub_rows")
            if rows and all(isinstance(r, list) and len(r) == 5 for r in rows):
                return {"rows": [tuple(str(c) for c in r) for r in rows]}
    return None


def parse_search_http(text: str) -> dict[str, Any] | None:
    """bench_search_http: its summary rows (what, figure, baseline, ratio, target)."""
    for line in text.splitlines():
        if line.startswith("BENCH_JSON "):
            rows = json.loads(line[len("BENCH_JSON ") :]).get("search_http_rows")
            if rows and all(isinstance(r, list) and len(r) == 5 for r in rows):
                return {"rows": [tuple(str(c) for c in r) for r in rows]}
    return None


PARSERS: dict[str, Callable[[str], dict[str, Any] | None]] = {
    "whole": parse_whole,
    "import": parse_import,
    "append": parse_append,
    "fork": parse_fork,
    "pages": parse_pages,
    "scale": parse_scale,
    "watch": parse_watch,
    "hub": parse_hub,
    "search_http": parse_search_http,
}


def _f(value: float | None, unit: str = "", digits: int = 2) -> str:
    return "?" if value is None else f"{value:.{digits}f}{unit}"


def summary(benches: dict[str, Bench]) -> list[tuple[str, str, str, str, str]]:
    """Rows: what, figure, same-run baseline, ratio, target (issue 12's table, in order)."""
    rows: list[tuple[str, str, str, str, str]] = []
    parsed = {}
    for name, bench in benches.items():
        result = None
        if bench.output:
            try:
                result = PARSERS[name](bench.output)
            except Exception as exc:  # a format this script does not know
                print(f"(could not read {bench.script}: {type(exc).__name__}: {exc})")
        parsed[name] = result

    def absent(name: str, what: str) -> None:
        bench = benches[name]
        why = bench.status if bench.status != "ok" else "output not understood, see below"
        rows.append((what, f"{bench.script}: {why}", "", "", ""))
        if bench.status == "ok":
            bench.parsed.add("unreadable")

    imp = parsed.get("import") or {}
    for column, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        if "rate" in imp.get(column, {}):
            r = imp[column]
            rows.append(
                (
                    f"import rate vs read + orjson.loads ({label})",
                    f"{r['rate']:.1f} MB/s",
                    f"{r['baseline']:.0f} MB/s",
                    f"{r['rate'] / r['baseline'] * 100:.0f}%",
                    ">= 50%",
                )
            )
            if "floor" in r:
                rows.append(
                    (
                        "  floor: decode + the same rows alone, nothing else",
                        "",
                        "",
                        f"{r['floor']:.0f}% at best",
                        ">= 50%",
                    )
                )
        else:
            absent("import", f"import rate vs read + orjson.loads ({label})")
    scale = parsed.get("scale")
    if scale:
        rows.append(
            (
                f"  scale run: {scale['mb']:.0f} MB into PostgreSQL",
                f"{scale['import_mb_s']:.1f} MB/s",
                f"{scale['raw_mb_s']:.0f} MB/s",
                f"{scale['import_vs_raw'] * 100:.0f}%",
                ">= 50%",
            )
        )
    appended = parsed.get("append")
    if appended and appended["rows"]:
        for r in appended["rows"]:
            base = [f"read + loads {r['baseline'] * 1e6:.0f} us"] if r["baseline"] else []
            if r["whole_graph"] is not None:
                base.append(f"whole graph {r['whole_graph'] * 1000:.0f} ms")
            rows.append(
                (
                    f"one line appended to a {r['mb']:.0f} MB session, imported",
                    f"{r['seconds'] * 1000:.1f} ms",
                    "; ".join(base),
                    "",
                    "< 100 ms, flat",
                )
            )
    else:
        absent("append", "one line appended to a 300 MB session, imported")
    fork = parsed.get("fork")
    if fork:
        for r in fork.get("floor", []):
            rows.append(
                (
                    f"  floor at {r['mb']:.0f} MB: the copy + registering its rows alone",
                    f"{r['rows_s']:.2f} s rows",
                    f"{r['cp_fsync']:.3f} s",
                    f"{r['best']:.1f}x at best of runs",
                    "<= 2x every run",
                )
            )
        for r in fork["rows"]:
            rows.append(
                (
                    f"{r['action']}, {r['mb']:.0f} MB session, vs cp + fsync",
                    f"{r['total']:.2f} s (median)",
                    f"{r['cp_fsync']:.3f} s",
                    f"{r['worst']:.1f}x worst of {r['runs']}",
                    "<= 2x every run",
                )
            )
    else:
        absent("fork", "branch of a 300 MB session vs cp + fsync")
    pages = parsed.get("pages")
    if pages:
        for label, r in pages["rows"].items():
            if r["baseline"] is not None or "transcript" in label.lower():
                base = [f"{r['queries']} queries"] if r["queries"] is not None else []
                if r["baseline"] is not None:
                    base.insert(0, f"read + loads {r['baseline']:.1f} ms")
                rows.append(
                    (
                        f"first paint: {label}" if r["baseline"] is not None else label,
                        f"{r['ms']:.1f} ms, {_f(r['kb'], ' KB', 0)}",
                        "; ".join(base),
                        "",
                        "< 50 ms, < 300 KB",
                    )
                )
    else:
        absent("pages", "transcript first paint (3 MB of tool output in one turn)")
    if scale:
        for label, r in scale["pages"].items():
            rows.append(
                (
                    f"  scale {scale['mb']:.0f} MB: {label}",
                    f"{r['median_ms']:.1f} ms, {r['kb']:.0f} KB",
                    f"{r['queries']} SQL queries",
                    "",
                    "bounded",
                )
            )
    memory = (appended or {}).get("memory") or []
    for m in memory:
        rows.append(
            (
                f"peak memory importing / showing a {m['mb']:.0f} MB session",
                f"{m['import']:.0f} MB / {m['page']:.0f} MB",
                f"{m['before']:.0f} / {m['page_before']:.0f} MB at process start",
                "",
                "< 150 MB, flat",
            )
        )
    peak = imp.get("peak")
    if peak:
        rows.append(
            (
                f"peak memory importing a {_f(peak['size'], ' MB', 0)} session (bench_import)",
                f"{peak['mb']:.0f} MB",
                f"{_f(peak['before'], ' MB', 0)} after django.setup",
                "",
                "< 150 MB, flat",
            )
        )
    elif not memory:
        absent("import", "peak memory importing a 300 MB session")
    if "unchanged" in imp:
        names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
        rows.append(
            (
                "unchanged rescan of the whole corpus, per 100 MB",
                ", ".join(f"{v:.3f} s ({names.get(k, k)})" for k, v in imp["unchanged"].items()),
                "",
                "",
                "~0.006 s per 100 MB",
            )
        )
    else:
        absent("import", "unchanged rescan of the whole corpus")
    if scale:
        rows.append(
            (
                f"  scale {scale['mb']:.0f} MB: unchanged rescan; one line appended"
                f" to its {scale['long_session_mb']:.0f} MB session",
                f"{scale['rescan_seconds']:.3f} s; {scale['append_seconds']:.3f} s",
                "",
                "",
                "",
            )
        )
        rows.append(
            (
                f"  scale {scale['mb']:.0f} MB: database MB per transcript MB (all; records)",
                f"{scale['db_per_mb']:.2f}; {scale['records_per_mb']:.2f}",
                f"{scale['sizes']['database'] / 1e6:.0f} MB for {scale['mb']:.0f} MB",
                "",
                "",
            )
        )
    else:
        absent("scale", "scale: 1 GB into PostgreSQL: rate, size per MB, pages")
    whole = parsed.get("whole")
    if whole and whole["rows"]:
        peer = next((r for name, r in whole["rows"].items() if name.startswith("agentsview")), None)
        for name, r in whole["rows"].items():
            rows.append(
                (
                    f"whole import (records, search, usage): {name}",
                    f"{r['median']:.2f} s, {r['peak']:.0f} MB peak",
                    f"read + loads {whole['baseline_s']:.2f} s"
                    + (f"; agentsview {peer['median']:.2f} s" if peer else ""),
                    f"{peer['median'] / r['median']:.2f}x agentsview's speed"
                    if peer and not name.startswith("agentsview")
                    else "",
                    ">= 1x agentsview (goal 2x)" if not name.startswith("agentsview") else "",
                )
            )
        if whole.get("floor"):
            text_mb, seconds = whole["floor"]
            rows.append(
                (
                    f"  its floor: a bare FTS5 trigram index of its {text_mb:.1f} MB of texts",
                    f"{seconds:.2f} s",
                    (f"agentsview {peer['median']:.2f} s" if peer else "")
                    + (
                        f", indexing {whole['peer_text_mb']:.1f} MB of words"
                        if whole.get("peer_text_mb") is not None
                        else ""
                    ),
                    f"{seconds / peer['median']:.2f}x agentsview's whole sync" if peer else "",
                    "reported",
                )
            )
        if whole.get("archive"):
            per_mb, added = whole["archive"]
            rows.append(
                (
                    "the archive: MB per transcript MB; what it adds to the whole import",
                    f"{per_mb:.2f}; {added:+.2f} s",
                    "the same import with BRANCHBOARD_ARCHIVE=0",
                    "",
                    "reported",
                )
            )
        if whole["first_page"] is not None:
            rows.append(
                (
                    "make run on a fresh data folder: its first page",
                    f"{whole['first_page']:.2f} s",
                    "",
                    "",
                    "<= 5 s, any corpus",
                )
            )
    else:
        absent("whole", "whole import vs agentsview; make run's first page")
    watch = parsed.get("watch")
    if watch:
        first = watch["rows"][0]
        for r in watch["rows"]:
            rows.append(
                (
                    f"watcher tick, one line appended, {r['mb']:.0f} MB ({r['files']} files)",
                    f"{r['tick']:.1f} ms",
                    f"stat {r['stat'] * 1000:.0f} us; full-rescan tick {r['full']:.0f} ms",
                    f"{r['tick'] / first['tick']:.2f}x the {first['mb']:.0f} MB tick",
                    "flat (same at 300 MB and 10 GB)",
                )
            )
    else:
        absent("watch", "watcher tick with one changed file, 300 MB and 10 GB")
    hub = parsed.get("hub")
    if hub:
        for what, *rest in hub["rows"]:
            rows.append((what if what.startswith("  ") else f"hub: {what}", *rest))
    else:
        absent("hub", "hub: 300 MB push vs cp+sync, append to the hub, 100 machines, memory")
    search_http = parsed.get("search_http")
    if search_http:
        rows += search_http["rows"]
    else:
        absent("search_http", "search over HTTP (/search/, /api/search), both databases at 1 GB")
    for name, result in parsed.items():
        if result is None and benches[name].status == "ok":
            benches[name].parsed.add("unreadable")
    return rows


def table(rows: list[tuple[str, ...]]) -> str:
    head = ("what", "figure", "same-run baseline", "ratio", "target")
    rows = [head, *rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (about 30 MB)")
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(PARSERS))
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per bench")
    parser.add_argument("--log-dir", type=Path, help="also write each bench's output here")
    parser.add_argument(
        "--replay", type=Path, help="run nothing: summarise the outputs a --log-dir kept"
    )
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    benches = {b.name: b for b in BENCHES}
    start = time.perf_counter()
    for bench in BENCHES:
        if only and bench.name not in only:
            continue
        if args.replay:
            log = args.replay / f"{bench.name}.txt"
            if log.exists():
                status, _, bench.output = log.read_text().partition("\n")
                bench.status = status.removeprefix("status: ")
            continue
        run_bench(bench, quick=args.quick, timeout=args.timeout)
        if args.log_dir:
            args.log_dir.mkdir(parents=True, exist_ok=True)
            log = args.log_dir / f"{bench.name}.txt"
            log.write_text(f"status: {bench.status}\n{bench.output}")
    total = time.perf_counter() - start
    rows = summary(benches)
    kind = "replayed" if args.replay else "quick" if args.quick else "full"
    print(f"\n===== summary ({kind} run, {total:.0f} s) =====")
    print(table(rows))
    print(
        "\n" + ", ".join(f"{b.name}: {b.status} ({b.seconds:.0f} s)" for b in benches.values()),
    )
    for bench in benches.values():
        if bench.output and (bench.status != "ok" or "unreadable" in bench.parsed):
            print(f"\n===== {bench.script} printed ({bench.status}) =====\n{bench.output[-6000:]}")
    if any(b.status.startswith(("failed", "timeout")) for b in benches.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
