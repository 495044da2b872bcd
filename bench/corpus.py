"""Generated sessions for the benchmarks, made from the real fixture transcripts.

Everything streams: a 300 MB session is written line by line, never held whole.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import orjson

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
BIGREPO = FIXTURES / "cli/claude/-home-dev-code-bigrepo/ad8024e4-83f0-4ff3-82f8-4e19f6c9127b.jsonl"
ID_KEYS = ("uuid", "parentUuid", "logicalParentUuid", "leafUuid", "messageId", "sessionId")


def _conversation_records(path: Path) -> list[dict]:
    """The records of a real session that carry a uuid, in file order."""
    out = []
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        if record.get("uuid"):
            out.append(record)
    return out


def long_session(
    folder: Path, *, target_bytes: int, session_id: str | None = None, source: Path = BIGREPO
) -> tuple[Path, int]:
    """One Claude Code session of about `target_bytes`, its turns copied from `source`.

    Each copy gets fresh uuids and is chained to the previous copy's last record,
    so the file is one long conversation. Returns the path and the number of lines.
    """
    session_id = session_id or str(uuid.uuid4())
    template = _conversation_records(source)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    written = lines = copy = 0
    previous_tail: str | None = None
    with path.open("wb", buffering=1 << 20) as out:
        while written < target_bytes:
            mapping: dict[str, str] = {}
            for record in template:
                mapping[record["uuid"]] = str(uuid.uuid4())
            for record in template:
                fresh = dict(record)
                fresh["uuid"] = mapping[record["uuid"]]
                parent = record.get("parentUuid")
                fresh["parentUuid"] = mapping.get(parent) if parent else previous_tail
                fresh["sessionId"] = session_id
                # Keep time moving forward so the newest leaf is the real end.
                fresh["timestamp"] = (
                    f"2026-{1 + copy // 28 % 12:02d}-{1 + copy % 28:02d}T{record.get('timestamp', 'T00:00:00.000Z').split('T', 1)[1]}"
                )
                data = orjson.dumps(fresh) + b"\n"
                out.write(data)
                written += len(data)
                lines += 1
            previous_tail = mapping[template[-1]["uuid"]]
            copy += 1
    return path, lines


def tiny_turns_session(folder: Path, *, turns: int, session_id: str | None = None) -> Path:
    """A session with many small turns (prompt, answer with a tool call, result, answer)."""
    session_id = session_id or str(uuid.uuid4())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    parent = None
    with path.open("wb", buffering=1 << 20) as out:
        for n in range(turns):
            for record in _turn(n, session_id, parent):
                out.write(orjson.dumps(record) + b"\n")
                parent = record["uuid"]
    return path


def _turn(n: int, sid: str, parent: str | None) -> Iterator[dict]:
    ts = f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    base = {"sessionId": sid, "timestamp": ts, "cwd": "/work/bench", "isSidechain": False}
    u, a, r, b = (str(uuid.uuid4()) for _ in range(4))
    yield {
        **base,
        "type": "user",
        "uuid": u,
        "parentUuid": parent,
        "message": {"role": "user", "content": f"Question {n}: what does step {n} do?"},
    }
    yield {
        **base,
        "type": "assistant",
        "uuid": a,
        "parentUuid": u,
        "message": {
            "id": f"m{n}a",
            "role": "assistant",
            "model": "claude-bench",
            "content": [
                {"type": "text", "text": f"Let me check **step {n}**."},
                {
                    "type": "tool_use",
                    "id": f"t{n}",
                    "name": "Bash",
                    "input": {"command": f"echo step {n}"},
                },
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }
    yield {
        **base,
        "type": "user",
        "uuid": r,
        "parentUuid": a,
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": f"step {n}"}],
        },
    }
    yield {
        **base,
        "type": "assistant",
        "uuid": b,
        "parentUuid": r,
        "message": {
            "id": f"m{n}b",
            "role": "assistant",
            "model": "claude-bench",
            "content": [
                {
                    "type": "text",
                    "text": f"Step {n} prints its number.\n\n| a | b |\n|---|---|\n| {n} | ok |",
                }
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }


def _remap(record: dict, mapping: dict[str, str], session_id: str) -> dict:
    out = dict(record)
    for key in ID_KEYS:
        value = out.get(key)
        if key == "sessionId" and "sessionId" in out:
            out[key] = session_id
        elif isinstance(value, str) and value:
            out[key] = mapping.setdefault(value, str(uuid.uuid4()))
    return out


def replicated_corpus(root: Path, *, target_bytes: int) -> tuple[int, int]:
    """Copies of every real fixture session, each with a fresh id and fresh uuids.

    Spread over several project folders; returns (files, bytes).
    """
    # The sessions of the Claude Code and Qwen Code layouts that the CLIs (or public
    # repositories) wrote, as in earlier rounds; not Codex's dated files, which no
    # projects root holds, nor the sessions made by hand for one test each.
    sources = [
        p
        for p in sorted(FIXTURES.rglob("*.jsonl"))
        if not p.name.startswith("agent-")
        and "subagents" not in p.parts
        and not {"codex", "made"} & set(p.relative_to(FIXTURES).parts)
    ]
    files = written = copy = 0
    while written < target_bytes:
        for source in sources:
            qwen = source.parent.name == "chats"
            project = (
                root
                / f"-bench-{source.parent.parent.name if qwen else source.parent.name}-{copy % 8}"
            )
            folder = project / "chats" if qwen else project
            folder.mkdir(parents=True, exist_ok=True)
            session_id = str(uuid.uuid4())
            mapping: dict[str, str] = {}
            with (folder / f"{session_id}.jsonl").open("wb", buffering=1 << 20) as out:
                for line in source.read_bytes().splitlines():
                    try:
                        record = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        data = line + b"\n"
                    else:
                        data = orjson.dumps(_remap(record, mapping, session_id)) + b"\n"
                    out.write(data)
                    written += len(data)
            files += 1
        copy += 1
    return files, written


def django_setup(data_dir: Path) -> None:
    """Django on a fresh SQLite database in `data_dir`, migrated."""
    os.environ["BRANCHBOARD_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "branchboard.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def owner_bearer(data_dir: Path | None = None) -> str:
    """`Bearer <owner token>` of the data folder (this process's, once Django is set up): a
    local dashboard answers its owner only."""
    from sessions_app.services.owner_token import owner_token

    if data_dir is None:
        from django.conf import settings

        data_dir = settings.DATA_DIR
    return f"Bearer {owner_token(folder=data_dir)}"


@contextmanager
def fresh_database(
    backend: str, data_dir: Path, pg_url: str, pg_name: str
) -> Iterator[dict[str, str]]:
    """The environment of a child process that finds a fresh, empty database.

    SQLite: a new file in `data_dir`. PostgreSQL: database `pg_name`, created next to
    the one `pg_url` names (whose tables are never touched) and dropped afterwards.
    """
    env = dict(os.environ, BRANCHBOARD_DATA_DIR=str(data_dir))
    env["DJANGO_SETTINGS_MODULE"] = "branchboard.settings"
    env.pop("DATABASE_URL", None)
    if backend == "sqlite":
        yield env
        return
    import psycopg

    admin = pg_url.replace("postgres://", "postgresql://", 1)
    parts = urlsplit(pg_url)
    env["DATABASE_URL"] = urlunsplit(parts._replace(path="/" + pg_name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {pg_name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {pg_name}")
    try:
        yield env
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {pg_name} WITH (FORCE)")
