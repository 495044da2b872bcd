"""An import holds one piece of a file at a time, and numbers it as one whole-graph analysis would.

The importer reads a file in pieces (`indexing.CHUNK_LINES` lines, cut before a
prompt) and stores each before reading the next, numbering it from the active leaf.
The reference is the whole file read and analysed at once (`CHUNK_LINES = None`,
the importer's way before pieces): every row and the session row must be the same,
for every fixture session and for generated ones, whatever the size of the pieces.
"""

from __future__ import annotations

import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.models import Project, Record, SearchText, Session
from sessions_app.services.importing import indexing, sessions_import

from .corpus import ALL_ROOTS
from .test_properties import STEP, build

pytestmark = pytest.mark.django_db

SESSION_FIELDS = (
    "record_count",
    "invalid_count",
    "turn_count",
    "leaf_uuid",
    "abandoned",
    "dangling_parents",
    "first_prompt",
    "title",
    "custom_title",
    "ai_title",
    "input_tokens",
    "output_tokens",
    "last_message_id",
    "models_used",
    "started_at",
    "updated_at",
    "line_count",
    "bytes_imported",
    "tail_offset",
    "tail_digest",
    "head_digest",
    "kind",
    "fork_turn",
    "cwd",
    "git_branch",
    "file_backups",
)
ROW_FIELDS = tuple(
    f.attname for f in Record._meta.concrete_fields if f.attname not in ("id", "session_id")
)


def facts() -> dict[str, tuple]:
    """Every session row's import facts and every record row, by path."""
    out = {}
    # The parent by its path, a search text by what it says: ids differ between two
    # imports on PostgreSQL (sequences are not rolled back).
    texts = dict(SearchText.objects.values_list("pk", "text"))
    at = ROW_FIELDS.index("search_text_id")
    for s in Session.objects.select_related("parent").order_by("path"):
        parent = s.parent.path if s.parent_id else None
        row = (*(getattr(s, name) for name in SESSION_FIELDS), parent)
        records = s.records.order_by("line").values_list(*ROW_FIELDS)
        out[s.path] = (row, [(*r[:at], texts.get(r[at]), *r[at + 1 :]) for r in records])
    return out


class _Rollback(Exception):
    pass


def imported_facts(roots: list[Path], chunk_lines: int | None, monkeypatch: Any) -> dict:
    """The facts of an import of `roots` into an empty index in pieces of `chunk_lines` (undone)."""
    monkeypatch.setattr(indexing, "CHUNK_LINES", chunk_lines)
    found: dict[str, tuple] = {}
    try:
        with transaction.atomic():
            Session.objects.all().delete()
            Project.objects.all().delete()
            report = sessions_import(roots=roots)
            assert all("not valid JSON" in e for e in report.errors), report.errors
            found = facts()
            raise _Rollback
    except _Rollback:
        pass
    return found


def _ts(n: int) -> str:
    return f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def long_session(folder: Path, *, turns: int, pad: int = 0, clock_back_at: int = -1) -> Path:
    """A Claude Code session of `turns` turns (prompt, tool call, result, progress, answer).

    `pad` characters of text in each answer make it big; at turn `clock_back_at` the
    clock goes back an hour (a machine's clock reset): the leaf is still the chain's end.
    """
    sid = str(uuid.uuid4())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    parent = None
    clock = 7200
    base = {"sessionId": sid, "cwd": "/work/long", "isSidechain": False}
    with path.open("wb") as out:
        for n in range(turns):
            if n == clock_back_at:
                clock -= 3600
            u, a, r, p, b = (str(uuid.uuid4()) for _ in range(5))
            call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}
            result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "out"}
            records = [
                {"type": "user", "uuid": u, "parentUuid": parent, "timestamp": _ts(clock),
                 "message": {"role": "user", "content": f"prompt {n}"}},
                {"type": "assistant", "uuid": a, "parentUuid": u, "timestamp": _ts(clock + 1),
                 "message": {"id": f"m{n}", "role": "assistant", "content": [call],
                             "usage": {"input_tokens": 3, "output_tokens": 5}}},
                {"type": "progress", "uuid": p, "parentUuid": a, "timestamp": _ts(clock + 1),
                 "data": {}},
                {"type": "user", "uuid": r, "parentUuid": a, "timestamp": _ts(clock + 2),
                 "message": {"role": "user", "content": [result]}},
                {"type": "assistant", "uuid": b, "parentUuid": r, "timestamp": _ts(clock + 3),
                 "message": {"id": f"n{n}", "role": "assistant",
                             "content": [{"type": "text", "text": f"answer {n} " + "x" * pad}],
                             "usage": {"input_tokens": 7, "output_tokens": 11}}},
            ]  # fmt: skip
            for record in records:
                out.write(orjson.dumps({**base, **record}) + b"\n")
            parent = b
            clock += 4
    return path


@pytest.mark.parametrize("chunk_lines", [1, 3, 50])
def test_the_fixture_corpus_imported_in_pieces_equals_one_whole_analysis(
    corpus: Path, monkeypatch: pytest.MonkeyPatch, chunk_lines: int
) -> None:
    roots = [corpus / r for r in (*ALL_ROOTS, "made/claude")]
    whole = imported_facts(roots, None, monkeypatch)
    assert len(whole) >= 20
    assert imported_facts(roots, chunk_lines, monkeypatch) == whole


def test_generated_sessions_imported_in_pieces_equal_one_whole_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_session(tmp_path / "-work-plain", turns=400)
    long_session(tmp_path / "-work-clock", turns=400, clock_back_at=200)
    (tmp_path / "-work-rewinds").mkdir()
    steps = ["prompt", "answer", "tool", "progress", "answer", "rewind"] * 60
    (tmp_path / "-work-rewinds" / f"{uuid.uuid4()}.jsonl").write_bytes(b"".join(build(steps)))
    whole = imported_facts([tmp_path], None, monkeypatch)
    assert {row[2] for row, _ in whole.values()} >= {400}  # turns counted
    for chunk_lines in (2, 17, 500):
        assert imported_facts([tmp_path], chunk_lines, monkeypatch) == whole, chunk_lines


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(STEP, max_size=40), chunk_lines=st.integers(min_value=1, max_value=6))
def test_any_session_imported_in_pieces_equals_one_whole_analysis(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[str],
    chunk_lines: int,
) -> None:
    root = tmp_path_factory.mktemp("root")
    (root / "-work-pieces").mkdir()
    path = root / "-work-pieces" / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(b"".join(build(["prompt", "answer", *steps])))
    assert imported_facts([root], chunk_lines, monkeypatch) == imported_facts(
        [root], None, monkeypatch
    )


def _import_peak(root: Path) -> int:
    """Bytes of Python memory at the peak of importing `root` (its data folder already set up)."""
    tracemalloc.start()
    try:
        report = sessions_import(roots=[root])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.sessions == 1 and not report.errors
    return peak


def test_memory_an_import_holds_does_not_grow_with_the_session(tmp_path: Path) -> None:
    # A small and a four times bigger session of the same lines (3 KB each, as real
    # sessions' average): about 3,000 and 12,000 lines. Holding a node per line
    # (about 0.7 KB with its row, before pieces) makes the bigger one's import peak
    # about 6 MB higher; holding one piece of 2,000 lines at a time, the two peak
    # alike (measured: within a few KB). The bound, 100 bytes per extra line (0.9 MB),
    # leaves room for allocator noise and is far below a node per line.
    small = long_session(tmp_path / "small" / "-work-mem", turns=600, pad=3000)
    big = long_session(tmp_path / "big" / "-work-mem", turns=2400, pad=3000)
    lines = [sum(1 for _ in p.open("rb")) for p in (small, big)]
    peaks = [_import_peak(p.parent.parent) for p in (small, big)]
    per_line = (peaks[1] - peaks[0]) / (lines[1] - lines[0])
    assert per_line < 100, (peaks, lines)
    assert Session.objects.get(path=str(big)).turn_count == 2400
