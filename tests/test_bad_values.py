"""One bad value never stops the import or the server (issue 10).

Each bad value sits in one otherwise normal record, a real corpus line with one
field changed: it is dropped (or clamped) by the reader, named in the report with
file and line, and the session is imported with everything else it says.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.db import connection
from hypothesis import example, given
from hypothesis import strategies as st

from sessions_app.formats import CLAUDE, detect_agent_from_path, parse_line, parse_timestamp
from sessions_app.models import Record, Session
from sessions_app.services.importing import ImportReport, sessions_import

from .corpus import FIXTURES, make_idle
from .facts import FORKS_TREE, SUBAGENT_FILES, TURNS

ROOT = Path(__file__).resolve().parent.parent
WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
QWENPROJ = "cli/qwen/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl"
# 1-based line numbers of real records in those files.
CLAUDE_REPLY = 58  # the last assistant record (message msg_9a52...): 10 tokens in, 5 out
CLAUDE_LAST_PROMPT = 59  # a last-prompt record with a leafUuid
QWEN_REPLY = 21  # the last assistant record: 10 tokens in, 5 out
# Token totals of the untouched files.
CLEAN_TOKENS = {WEBAPP: (60, 30), QWENPROJ: (50, 25)}
HUGE = 2**64 - 1


def fixture_record(relpath: str, line: int) -> dict[str, Any]:
    return orjson.loads((FIXTURES / relpath).read_bytes().splitlines()[line - 1])


def changed(relpath: str, line: int, keys: tuple[str, ...], value: Any) -> bytes:
    """Line `line` of a corpus file with the field at `keys` set to `value`."""
    record = fixture_record(relpath, line)
    target = record
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return orjson.dumps(record) + b"\n"


def parsed(relpath: str, line: int, keys: tuple[str, ...], value: Any):
    agent = detect_agent_from_path(Path(relpath))
    return parse_line(agent, changed(relpath, line, keys, value))


# (relpath, line, keys, bad value, the start of the entry that names it)
BAD_VALUES = {
    "claude-huge-input-tokens": (
        WEBAPP,
        CLAUDE_REPLY,
        ("message", "usage", "input_tokens"),
        HUGE,
        "message.usage.input_tokens: out of range (18446744073709551615)",
    ),
    "claude-huge-output-tokens": (
        WEBAPP,
        CLAUDE_REPLY,
        ("message", "usage", "output_tokens"),
        HUGE,
        "message.usage.output_tokens: out of range (18446744073709551615)",
    ),
    "claude-negative-output-tokens": (
        WEBAPP,
        CLAUDE_REPLY,
        ("message", "usage", "output_tokens"),
        -1,
        "message.usage.output_tokens: out of range (-1)",
    ),
    "claude-late-timestamp": (
        WEBAPP,
        CLAUDE_REPLY,
        ("timestamp",),
        "9999-12-31T23:00:00+14:00",
        "timestamp: out of range",
    ),
    "claude-early-timestamp": (
        WEBAPP,
        CLAUDE_REPLY,
        ("timestamp",),
        "0001-01-01T00:00:00+14:00",
        "timestamp: out of range",
    ),
    "claude-timestamp-past-9999-in-utc": (
        WEBAPP,
        CLAUDE_REPLY,
        ("timestamp",),
        "9999-12-31T23:00:00-14:00",
        "timestamp: out of range",
    ),
    "claude-nul-in-model": (
        WEBAPP,
        CLAUDE_REPLY,
        ("message", "model"),
        "claude-opus\x00-5-5",
        "message.model: contains NUL",
    ),
    "claude-nul-in-message-id": (
        WEBAPP,
        CLAUDE_REPLY,
        ("message", "id"),
        "msg_9a52\x00",
        "message.id: contains NUL",
    ),
    "qwen-huge-prompt-tokens": (
        QWENPROJ,
        QWEN_REPLY,
        ("usageMetadata", "promptTokenCount"),
        HUGE,
        "usageMetadata.promptTokenCount: out of range (18446744073709551615)",
    ),
    "qwen-negative-candidates-tokens": (
        QWENPROJ,
        QWEN_REPLY,
        ("usageMetadata", "candidatesTokenCount"),
        -1,
        "usageMetadata.candidatesTokenCount: out of range (-1)",
    ),
    "qwen-early-timestamp": (
        QWENPROJ,
        QWEN_REPLY,
        ("timestamp",),
        "0001-01-01T00:00:00+14:00",
        "timestamp: out of range",
    ),
    "qwen-nul-in-model": (
        QWENPROJ,
        QWEN_REPLY,
        ("model",),
        "fake\x00model",
        "model: contains NUL",
    ),
}


# The readers, without a database.


def test_corpus_lines_drop_nothing() -> None:
    for relpath in (*TURNS, *SUBAGENT_FILES):
        agent = detect_agent_from_path(Path(relpath))
        for n, raw in enumerate((FIXTURES / relpath).read_bytes().splitlines(), 1):
            assert parse_line(agent, raw).dropped == (), f"{relpath}:{n}"


@pytest.mark.parametrize("case", BAD_VALUES)
def test_reader_drops_the_bad_value_and_keeps_the_rest(case: str) -> None:
    relpath, line, keys, value, entry = BAD_VALUES[case]
    record = parsed(relpath, line, keys, value)
    raw = (FIXTURES / relpath).read_bytes().splitlines()[line - 1]
    clean = parse_line(detect_agent_from_path(Path(relpath)), raw)
    assert clean.dropped == ()
    assert len(record.dropped) == 1 and record.dropped[0].startswith(entry), record.dropped
    # Everything else the line says is still read.
    assert (record.kind, record.uuid, record.parent_uuid) == (
        clean.kind,
        clean.uuid,
        clean.parent_uuid,
    )
    for name in ("input_tokens", "output_tokens"):
        assert 0 <= getattr(record, name) <= 2**31 - 1
    for name in ("model", "message_id", "cwd", "git_branch", "uuid", "session_id"):
        assert "\x00" not in (getattr(record, name) or "")
    if keys == ("timestamp",):
        assert record.timestamp is None and record.time is None
        assert parse_timestamp(value) is None
    else:
        assert record.timestamp == clean.timestamp and record.time == clean.time


def test_claude_token_counts_out_of_range_are_dropped_to_zero() -> None:
    usage = ("message", "usage")
    assert parsed(WEBAPP, CLAUDE_REPLY, (*usage, "input_tokens"), HUGE).input_tokens == 0
    assert parsed(WEBAPP, CLAUDE_REPLY, (*usage, "output_tokens"), HUGE).output_tokens == 0
    negative = parsed(WEBAPP, CLAUDE_REPLY, (*usage, "cache_read_input_tokens"), -7)
    assert negative.input_tokens == 10 and negative.output_tokens == 5
    assert negative.dropped == ("message.usage.cache_read_input_tokens: out of range (-7)",)
    largest = parsed(WEBAPP, CLAUDE_REPLY, (*usage, "output_tokens"), 2**31 - 1)
    assert largest.output_tokens == 2**31 - 1 and largest.dropped == ()


def test_claude_input_token_total_is_clamped() -> None:
    record = fixture_record(WEBAPP, CLAUDE_REPLY)
    record["message"]["usage"].update(input_tokens=2**31 - 1, cache_read_input_tokens=2**31 - 1)
    parsed_record = parse_line(CLAUDE, orjson.dumps(record))
    assert parsed_record.input_tokens == 2**31 - 1
    assert parsed_record.dropped == (
        "message.usage: input token total above 2147483647, clamped (4294967294)",
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (1.5, "not an integer"),
        (True, "not a number"),
        ("10", "not a number"),
        ([10], "not a number"),
        (1e30, "out of range"),
    ],
    ids=["fraction", "bool", "string", "list", "float-huge"],
)
def test_token_count_of_another_type_is_dropped(value: Any, why: str) -> None:
    record = parsed(WEBAPP, CLAUDE_REPLY, ("message", "usage", "output_tokens"), value)
    assert record.output_tokens == 0
    assert record.dropped == (f"message.usage.output_tokens: {why} ({value!r})",)


def test_integer_beyond_64_bits_is_dropped() -> None:
    # orjson reads such a number as a float; the line is otherwise the real one.
    raw = orjson.dumps(fixture_record(WEBAPP, CLAUDE_REPLY)).replace(
        b'"output_tokens":5', b'"output_tokens":' + b"9" * 30, 1
    )
    record = parse_line(CLAUDE, raw)
    assert record.output_tokens == 0 and record.input_tokens == 10
    assert record.dropped[0].startswith("message.usage.output_tokens: out of range (1e+30)")


def test_qwen_token_counts_out_of_range_are_dropped() -> None:
    meta = ("usageMetadata",)
    huge = parsed(QWENPROJ, QWEN_REPLY, (*meta, "promptTokenCount"), HUGE)
    assert (huge.input_tokens, huge.output_tokens) == (0, 5)
    negative = parsed(QWENPROJ, QWEN_REPLY, (*meta, "candidatesTokenCount"), -3)
    assert (negative.input_tokens, negative.output_tokens) == (10, 0)
    not_object = parsed(QWENPROJ, QWEN_REPLY, meta, "lots")
    assert (not_object.input_tokens, not_object.output_tokens) == (0, 0)
    assert not_object.dropped == ("usageMetadata: not an object ('lots')",)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("9999-12-31T23:00:00+14:00", "out of range"),  # 09:00 UTC on the very last day
        ("9999-12-31T23:00:00-14:00", "out of range"),  # year 10000 in UTC
        ("0001-01-01T00:00:00+14:00", "out of range"),  # year 0 in UTC
        ("0001-01-01T00:00:00", "out of range"),  # any local zone is year 0
        ("yesterday", "not an ISO 8601 time"),
        ("2026-13-01T00:00:00Z", "not an ISO 8601 time"),
    ],
)
def test_timestamp_that_cannot_be_stored_is_dropped(value: str, why: str) -> None:
    for relpath, line in ((WEBAPP, CLAUDE_REPLY), (QWENPROJ, QWEN_REPLY)):
        record = parsed(relpath, line, ("timestamp",), value)
        assert record.timestamp is None and record.time is None
        assert record.dropped == (f"timestamp: {why} ({value!r})",)
        assert record.uuid == fixture_record(relpath, line)["uuid"]


def test_timestamp_of_another_type_is_dropped() -> None:
    record = parsed(WEBAPP, CLAUDE_REPLY, ("timestamp",), 1764000000)
    assert record.timestamp is None
    assert record.dropped == ("timestamp: not a string (1764000000)",)


def test_good_timestamps_near_the_ends_are_kept() -> None:
    assert parse_timestamp("0002-01-01T00:00:00+14:00") == datetime(1, 12, 31, 10, tzinfo=UTC)
    assert parse_timestamp("9998-12-31T23:00:00-14:00") == datetime(9999, 1, 1, 13, tzinfo=UTC)
    record = parsed(WEBAPP, CLAUDE_REPLY, ("timestamp",), "2026-11-22T11:43:35.450Z")
    assert record.time == datetime(2026, 11, 22, 11, 43, 35, 450000, tzinfo=UTC)


OFFSETS = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


EAST, WEST = timezone(timedelta(hours=14)), timezone(timedelta(hours=-14))


@given(
    moment=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59)),
    offset=OFFSETS,
    local=OFFSETS,
)
@example(moment=datetime(1, 1, 1), offset=EAST, local=UTC)
@example(moment=datetime(9999, 12, 31, 23), offset=WEST, local=UTC)
@example(moment=datetime(9999, 12, 31, 23), offset=EAST, local=EAST)
@example(moment=datetime(1, 1, 1, 12), offset=UTC, local=WEST)
def test_a_parsed_timestamp_converts_to_any_zone(
    moment: datetime, offset: timezone, local: timezone
) -> None:
    result = parse_timestamp(moment.replace(tzinfo=offset).isoformat())
    if result is not None:
        result.astimezone(UTC)
        result.astimezone(local)


@given(st.one_of(st.text(), st.none(), st.integers(), st.floats(), st.binary()))
def test_parse_timestamp_never_raises(value: Any) -> None:
    result = parse_timestamp(value)
    assert result is None or result.astimezone(UTC).year < 10000


@pytest.mark.parametrize(
    ("keys", "value", "entry"),
    [
        (("message", "model"), "claude\x00", "message.model: contains NUL ('claude\\x00')"),
        (("message", "model"), "m" * 129, "message.model: longer than 128 characters"),
        (("message", "model"), 5, "message.model: not a string (5)"),
        (("message", "id"), "msg\x00", "message.id: contains NUL ('msg\\x00')"),
        (("message", "id"), "m" * 129, "message.id: longer than 128 characters"),
        (("cwd",), "/home/dev\x00/code", "cwd: contains NUL"),
        (("cwd",), "/" + "d" * 4096, "cwd: longer than 4096 characters"),
        (("gitBranch",), "master\x00", "gitBranch: contains NUL"),
        (("gitBranch",), "b" * 256, "gitBranch: longer than 255 characters"),
        (("uuid",), "u" * 65, "uuid: longer than 64 characters"),
        (("parentUuid",), "p\x00", "parentUuid: contains NUL"),
        (("sessionId",), ["d62afd75"], "sessionId: not a string"),
        (("message", "usage"), "many", "message.usage: not an object ('many')"),
    ],
    ids=[
        "model-nul",
        "model-long",
        "model-number",
        "message-id-nul",
        "message-id-long",
        "cwd-nul",
        "cwd-long",
        "branch-nul",
        "branch-long",
        "uuid-long",
        "parent-nul",
        "session-id-list",
        "usage-string",
    ],
)
def test_claude_string_that_cannot_be_stored_is_dropped(
    keys: tuple[str, ...], value: Any, entry: str
) -> None:
    record = parsed(WEBAPP, CLAUDE_REPLY, keys, value)
    assert len(record.dropped) == 1 and record.dropped[0].startswith(entry), record.dropped
    assert len(record.dropped[0]) < 200  # the value is shown cut short
    assert getattr(record, FIELDS.get(keys, "kind")) in (None, "assistant")
    assert record.kind == "assistant"


FIELDS = {
    ("message", "model"): "model",
    ("message", "id"): "message_id",
    ("cwd",): "cwd",
    ("gitBranch",): "git_branch",
    ("uuid",): "uuid",
    ("parentUuid",): "parent_uuid",
    ("sessionId",): "session_id",
}


def test_qwen_model_with_nul_is_dropped() -> None:
    record = parsed(QWENPROJ, QWEN_REPLY, ("model",), "fake\x00model")
    assert record.model is None and (record.input_tokens, record.output_tokens) == (10, 5)
    assert record.dropped == ("model: contains NUL ('fake\\x00model')",)


def test_leaf_and_fork_ids_that_cannot_be_stored_are_dropped() -> None:
    leaf = parsed(WEBAPP, CLAUDE_LAST_PROMPT, ("leafUuid",), "l" * 65)
    assert leaf.leaf_uuid is None and leaf.dropped[0].startswith("leafUuid: longer than 64")
    fork_line = 1
    forked = parsed(FORKS_TREE, fork_line, ("forkedFrom", "sessionId"), "1d4a\x00")
    assert forked.forked_from is None
    assert forked.dropped == ("forkedFrom.sessionId: contains NUL ('1d4a\\x00')",)


def test_several_bad_values_in_one_line_are_each_named() -> None:
    record = fixture_record(WEBAPP, CLAUDE_REPLY)
    record["timestamp"] = "0001-01-01T00:00:00+14:00"
    record["message"]["model"] = "x\x00"
    record["message"]["usage"]["input_tokens"] = -1
    parsed_record = parse_line(CLAUDE, orjson.dumps(record))
    assert [entry.split(":")[0] for entry in parsed_record.dropped] == [
        "timestamp",
        "message.model",
        "message.usage.input_tokens",
    ]


# The import, on whichever database the tests run on (SQLite, or DATABASE_URL).


def damage(corpus: Path, relpath: str, line: int, keys: tuple[str, ...], value: Any) -> Path:
    """Put `value` into one field of one line of a corpus copy's file; returns the file."""
    path = corpus / relpath
    lines = path.read_bytes().splitlines(keepends=True)
    lines[line - 1] = changed(relpath, line, keys, value)
    path.write_bytes(b"".join(lines))
    return path


def import_roots(corpus: Path) -> ImportReport:
    make_idle(corpus)
    return sessions_import(roots=[corpus / "cli/claude", corpus / "cli/qwen"])


def latest_other_time(relpath: str, line: int) -> datetime:
    times = [
        parse_timestamp(orjson.loads(raw).get("timestamp"))
        for n, raw in enumerate((FIXTURES / relpath).read_bytes().splitlines(), 1)
        if n != line
    ]
    return max(t for t in times if t)


def assert_root_imported(corpus: Path) -> None:
    """Every session and subagent file of the roots is imported, with its turns."""
    for relpath, turns in TURNS.items():
        if relpath.startswith("cli/"):
            session = Session.objects.get(path=str(corpus / relpath))
            assert session.turn_count == turns, relpath
    for relpath in SUBAGENT_FILES:
        if relpath.startswith("cli/"):
            assert Session.objects.filter(path=str(corpus / relpath), is_subagent=True).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("case", BAD_VALUES)
def test_import_drops_the_bad_value_and_goes_on(case: str, corpus: Path, client) -> None:
    relpath, line, keys, value, entry = BAD_VALUES[case]
    path = damage(corpus, relpath, line, keys, value)

    report = import_roots(corpus)

    # The session is imported, and so is every other session of the roots.
    assert Session.objects.filter(path=str(path)).exists(), report.errors
    assert_root_imported(corpus)
    session = Session.objects.get(path=str(path))
    assert session.record_count == len(path.read_bytes().splitlines())
    if relpath == WEBAPP:
        assert session.title == "subtract feature"
    # Everything stored reads back (a time beyond the year range would not), and the
    # pages show it.
    rows = list(Record.objects.filter(session=session).values_list("line", "timestamp"))
    for url in ("/", f"/projects/{session.project_id}/", f"/sessions/{session.session_id}/"):
        assert client.get(url).status_code == 200, url
    # The bad value is gone; the rest of its line is kept.
    bad_row = Record.objects.get(session=session, line=line - 1)
    assert bad_row.uuid == fixture_record(relpath, line)["uuid"]
    if keys == ("timestamp",):
        assert bad_row.timestamp is None
        assert session.updated_at == latest_other_time(relpath, line)
    assert all(ts is None or ts.year == 2026 for _, ts in rows)
    assert session.started_at.year == 2026 and session.updated_at.year == 2026
    clean_in, clean_out = CLEAN_TOKENS[relpath]
    if keys[-1] in ("input_tokens", "promptTokenCount"):
        assert (bad_row.input_tokens, session.input_tokens) == (0, clean_in - 10)
    elif keys[-1] in ("output_tokens", "candidatesTokenCount"):
        assert (bad_row.output_tokens, session.output_tokens) == (0, clean_out - 5)
    else:
        assert (session.input_tokens, session.output_tokens) == (clean_in, clean_out)
    assert session.models_used == (["claude-opus-5-5"] if relpath == WEBAPP else ["fake-model"])
    assert "\x00" not in session.last_message_id
    # The report names the file, the line and the field, and nothing else went wrong.
    assert any(e.startswith(f"{path}:{line}: {entry}") for e in report.errors), report.errors
    assert not [e for e in report.errors if not e.startswith(f"{path}:{line}: ")], report.errors


def _database_url() -> str:
    """The test database, for a command run in a subprocess."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    login = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{login}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


SUBPROCESS_DAMAGE = [
    (WEBAPP, 21, ("message", "usage", "input_tokens"), HUGE),
    (WEBAPP, 31, ("message", "usage", "output_tokens"), -1),
    (WEBAPP, 35, ("timestamp",), "0001-01-01T00:00:00+14:00"),
    (WEBAPP, 46, ("message", "model"), "claude\x00"),
    (WEBAPP, 58, ("message", "id"), "msg\x00"),
    (QWENPROJ, 4, ("usageMetadata", "promptTokenCount"), HUGE),
    (QWENPROJ, 8, ("timestamp",), "9999-12-31T23:00:00+14:00"),
    (QWENPROJ, 21, ("model",), "fake\x00"),
]


@pytest.mark.django_db(transaction=True)
def test_import_command_exits_zero_with_every_bad_value(corpus: Path) -> None:
    for relpath, line, keys, value in SUBPROCESS_DAMAGE:
        damage(corpus, relpath, line, keys, value)
    make_idle(corpus)
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env["DATABASE_URL"] = _database_url()
    roots = ["--root", str(corpus / "cli/claude"), "--root", str(corpus / "cli/qwen")]
    result = subprocess.run(
        [sys.executable, "manage.py", "import_sessions", "--no-progress", *roots],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for relpath, line, keys, _value in SUBPROCESS_DAMAGE:
        assert f"{corpus / relpath}:{line}: {'.'.join(keys)}: " in result.stderr, (relpath, line)
    assert_root_imported(corpus)
