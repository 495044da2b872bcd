"""A fork's lines restamped on their bytes: the same bytes as before, and the record's own id."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from bench.bench_fork import generate
from sessions_app.formats.writing import UNCHANGED, restamp_into

FIXTURES = Path(__file__).parent / "fixtures"
NEW_ID = "11111111-2222-4333-8444-555555555555"


def _restamp_before(line: bytes, *, source_id: str, new_id: str, message_uuid: str | None) -> bytes:
    """`restamp` as it was before the byte read-back (the reference the fast path must match)."""
    out: list[bytes] = []
    write: Callable = out.append
    end = len(line)
    while end and line[end - 1] in b"\r\n":
        end -= 1
    newline = line[end:] or b"\n"
    needle = b'"sessionId":"' + source_id.encode() + b'"'
    at = line.rfind(b'"sessionId"', 0, end)
    if (
        at >= 0
        and line.startswith(needle, at)
        and line[end - 1] == 0x7D
        and line.find(b'"forkedFrom"', at, end) == -1
    ):
        write(line[:at])
        write(b'"sessionId":"' + new_id.encode() + b'"')
        if message_uuid:
            write(line[at + len(needle) : end - 1])
            write(
                b',"forkedFrom":{"sessionId":"' + source_id.encode() + b'","messageUuid":"'
                + message_uuid.encode() + b'"}}'
            )  # fmt: skip
        else:
            write(line[at + len(needle) : end])
        write(newline)
        return b"".join(out)
    try:
        data = orjson.loads(line[:end])
    except orjson.JSONDecodeError:
        return line
    if not isinstance(data, dict):
        return line
    if "sessionId" in data:
        data["sessionId"] = new_id
    if message_uuid:
        data["forkedFrom"] = {"sessionId": source_id, "messageUuid": message_uuid}
    return orjson.dumps(data) + newline


def _restamp_now(line: bytes, *, source_id: str, message_uuid: str | None) -> tuple[bytes, int]:
    pieces: list = []
    at = restamp_into(
        pieces.append, line, source_id=source_id, new_id=NEW_ID, message_uuid=message_uuid
    )
    return b"".join(bytes(p) for p in pieces), at


def _lines_of(path: Path) -> list[tuple[bytes, str, str | None]]:
    """(line, the session id it is copied from, its uuid) for every JSON object line."""
    out = []
    for line in path.read_bytes().splitlines(keepends=True):
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict):
            source_id = data.get("sessionId")
            message_uuid = data.get("uuid") if isinstance(data.get("uuid"), str) else None
            out.append((line, source_id if isinstance(source_id, str) else path.stem, message_uuid))
    return out


def _check_same_as_before(lines: list[tuple[bytes, str, str | None]]) -> int:
    """Every line restamps to the bytes it did before; returns how many took the byte path."""
    fast = 0
    for line, source_id, message_uuid in lines:
        now, at = _restamp_now(line, source_id=source_id, message_uuid=message_uuid)
        before = _restamp_before(
            line, source_id=source_id, new_id=NEW_ID, message_uuid=message_uuid
        )
        if at == UNCHANGED:
            # A line that names no session and gets no `forkedFrom` is copied as it is
            # (docs/design.md, "The three actions": kept records copied unchanged);
            # before, it was parsed and written again, which changed the bytes of
            # non-compact JSON only.
            assert orjson.loads(now) == orjson.loads(before)
        else:
            assert now == before, line[:200]
        if at == UNCHANGED:
            fast += 1
            assert now == line if line.endswith(b"\n") else line + b"\n"
        elif at >= 0:
            fast += 1
            assert now.startswith(b'"sessionId":"' + NEW_ID.encode() + b'"', at)
            assert orjson.loads(now)["sessionId"] == NEW_ID
    return fast


FIXTURE_FILES = sorted(FIXTURES.rglob("*.jsonl"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_restamp_gives_the_old_bytes_on_every_fixture_line(path: Path) -> None:
    _check_same_as_before(_lines_of(path))


def test_restamp_takes_the_byte_path_for_the_cli_lines() -> None:
    lines = [item for path in FIXTURE_FILES if "/cli/" in str(path) for item in _lines_of(path)]
    fast = _check_same_as_before(lines)
    assert lines and fast >= 0.95 * len(lines)
    # The CLIs write compact JSON: every line comes out exactly as the old path wrote it.
    for line, source_id, message_uuid in lines:
        now, _at = _restamp_now(line, source_id=source_id, message_uuid=message_uuid)
        assert now == _restamp_before(
            line, source_id=source_id, new_id=NEW_ID, message_uuid=message_uuid
        )


def test_restamp_gives_the_old_bytes_on_a_generated_session(tmp_path: Path) -> None:
    path, _ = generate(tmp_path, target_bytes=400_000)
    lines = _lines_of(path)
    assert _check_same_as_before(lines) == len(lines)


def test_restamp_changes_the_records_own_id_not_a_nested_one() -> None:
    # Qwen Code writes its `sessionId` before the message: a tool result that quotes a
    # record of the same session must keep its id, and the record's own must change.
    source = str(uuid.uuid4())
    record = {
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": source,
        "type": "tool_result",
        "toolCallResult": {"output": {"sessionId": source, "ok": True}},
    }
    line = orjson.dumps(record) + b"\n"
    now, at = _restamp_now(line, source_id=source, message_uuid="u1")
    data = orjson.loads(now)
    assert at == -1  # not provable on the bytes: parsed instead
    assert data["sessionId"] == NEW_ID
    assert data["toolCallResult"]["output"]["sessionId"] == source
    assert data["forkedFrom"] == {"sessionId": source, "messageUuid": "u1"}


def test_restamp_finds_an_escaped_top_level_key() -> None:
    source = str(uuid.uuid4())
    line = (
        b'{"uuid":"u1","sess\\u0069onId":"' + source.encode() + b'","type":"user",'
        b'"message":{"sessionId":"' + source.encode() + b'"}}\n'
    )
    now, at = _restamp_now(line, source_id=source, message_uuid=None)
    data = orjson.loads(now)
    assert at == -1
    assert data["sessionId"] == NEW_ID
    assert data["message"]["sessionId"] == source


def test_restamp_keeps_the_bytes_of_a_record_in_message_text() -> None:
    # The id in a prompt's text is not a key: only the record's own key changes.
    source = str(uuid.uuid4())
    text = f'see \\"sessionId\\":\\"{source}\\" in the log'
    line = (
        b'{"parentUuid":null,"type":"user","message":{"role":"user","content":"'
        + text.encode() + b'"},"uuid":"u1","cwd":"/w","sessionId":"' + source.encode()
        + b'","version":"2.1.0","gitBranch":"main"}\n'
    )  # fmt: skip
    now, at = _restamp_now(line, source_id=source, message_uuid="u1")
    data = orjson.loads(now)
    assert at >= 0
    assert data["sessionId"] == NEW_ID
    assert source in data["message"]["content"]
    assert now.replace(NEW_ID.encode(), source.encode()).startswith(line[: line.rfind(b"}")])
