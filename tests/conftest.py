from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_ROOTS = ("cli/claude", "public/claude")
QWEN_ROOTS = ("cli/qwen", "synthetic/qwen")
ALL_ROOTS = CLAUDE_ROOTS + QWEN_ROOTS


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A writable copy of the fixture corpus, so tests can grow and damage files."""
    target = tmp_path / "corpus"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture
def corpus_roots(corpus: Path) -> list[Path]:
    return [corpus / r for r in ALL_ROOTS]


def make_idle(root: Path) -> None:
    """Make session files look finished (written a minute ago), as the rewind guard wants."""
    old = time.time() - 60
    for path in root.rglob("*.jsonl"):
        os.utime(path, (old, old))


@pytest.fixture
def imported(corpus: Path, corpus_roots: list[Path], db: None) -> Path:
    """The fixture corpus, idle and imported."""
    from sessions_app.services.importing import sessions_import

    make_idle(corpus)
    sessions_import(roots=corpus_roots)
    return corpus


EVIL = "<script>alert(1)</script> <img src=x onerror=alert(2)> [click me](javascript:alert(3))"


def write_evil_session(root: Path) -> str:
    """A session whose prompt, reply and tool output try to run script; returns its id."""
    import uuid

    import orjson

    folder = root / "-evil"
    folder.mkdir(parents=True, exist_ok=True)
    sid = str(uuid.uuid4())
    base = {"sessionId": sid, "cwd": "/evil"}
    records = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"content": EVIL},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {
                "content": [
                    {"type": "text", "text": EVIL},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": EVIL}},
                ]
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": EVIL}]},
        },
    ]
    (folder / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return sid
