"""An append that continues the active branch is numbered from its leaf; anything else falls back.

Every test appends to an imported session, imports again, and checks the index
against a fresh import of the same file: every row (turn, active, turn start), and
the session row (counts, leaf, abandoned branches, title, first prompt, tokens,
times). Whether the append took the short path is seen by which writer ran.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.models import Project, Session
from sessions_app.services.importing import indexing, sessions_import

from .factories import assistant_record, jsonl, tool_result, user_record
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
    "input_tokens",
    "output_tokens",
    "last_message_id",
    "models_used",
    "started_at",
    "updated_at",
    "line_count",
    "bytes_imported",
)
ROW_FIELDS = ("line", "offset", "length", "uuid", "kind", "turn", "active", "starts_turn")


def _ts(n: int) -> str:
    return f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def conversation(turns: int) -> tuple[str, list[dict[str, Any]]]:
    """A Claude Code session of `turns` prompts, each answered by a tool call and a reply."""
    sid = str(uuid.uuid4())
    records: list[dict[str, Any]] = []
    parent = None
    clock = 0
    for n in range(turns):
        user = user_record(f"prompt {n + 1}", sid=sid, parent=parent, timestamp=_ts(clock))
        call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}
        asked = assistant_record([call], sid=sid, parent=user["uuid"], timestamp=_ts(clock + 1))
        result = user_record(
            tool_result(f"t{n}", "out"), sid=sid, parent=asked["uuid"], timestamp=_ts(clock + 2)
        )
        reply = assistant_record(
            f"answer {n + 1}", sid=sid, parent=result["uuid"], timestamp=_ts(clock + 3)
        )
        records += [user, asked, result, reply]
        parent = reply["uuid"]
        clock += 4
    return sid, records


class Spy:
    """Which writer an import used: the short path, or the whole-graph one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name, label in (("records_append", "short"), ("store_records", "whole")):
            real = getattr(indexing, name)
            monkeypatch.setattr(indexing, name, self._wrap(real, label))

    def _wrap(self, real: Any, label: str) -> Any:
        def spy(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(label)
            return real(*args, **kwargs)

        return spy

    def last(self) -> str:
        return self.calls[-1]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


def facts() -> dict[str, tuple]:
    out = {}
    for s in Session.objects.order_by("path"):
        row = tuple(getattr(s, name) for name in SESSION_FIELDS)
        records = list(s.records.order_by("line").values_list(*ROW_FIELDS))
        out[s.path] = (row, records)
    return out


class _Rollback(Exception):
    pass


def fresh_facts(root: Path) -> dict[str, tuple]:
    """The facts of a fresh import of `root` into an empty index (then undone)."""
    found: dict[str, tuple] = {}
    try:
        with transaction.atomic():
            Session.objects.all().delete()
            Project.objects.all().delete()
            sessions_import(roots=[root])
            found = facts()
            raise _Rollback
    except _Rollback:
        pass
    return found


def setup_session(root: Path, records: list[dict[str, Any]], sid: str) -> Path:
    folder = root / "-work-append"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(jsonl(records))
    report = sessions_import(roots=[root])
    assert report.sessions == 1 and not report.errors
    return path


def append(path: Path, *lines: dict[str, Any] | bytes) -> None:
    with path.open("ab") as f:
        for line in lines:
            f.write(line if isinstance(line, bytes) else orjson.dumps(line) + b"\n")


def import_and_compare(root: Path, spy: Spy, expected_path: str) -> None:
    report = sessions_import(roots=[root])
    assert all("not valid JSON" in e for e in report.errors), report.errors
    assert spy.last() == expected_path
    assert facts() == fresh_facts(root)


def leaf_of(path: Path) -> str:
    return Session.objects.get(path=str(path)).leaf_uuid


# The short path: a plain append continues the active leaf.


@pytest.mark.parametrize("turns", [3, 300])
def test_plain_append_takes_the_short_path_in_queries_independent_of_size(
    tmp_path: Path, spy: Spy, turns: int, django_assert_max_num_queries: Any
) -> None:
    sid, records = conversation(turns)
    path = setup_session(tmp_path, records, sid)
    prompt = user_record("one more", sid=sid, parent=leaf_of(path), timestamp=_ts(10**5))
    append(path, prompt)
    # 15, and 3 for its search text (uuids looked up, an id taken, the text stored), which
    # the search pass no longer reads again, and 1 a pass asks once for the sessions whose
    # folder's files the archive does not hold yet (archive/sidecars: caught up once).
    with django_assert_max_num_queries(19):
        sessions_import(roots=[tmp_path])
    assert spy.last() == "short"
    session = Session.objects.get(path=str(path))
    assert (session.turn_count, session.leaf_uuid) == (turns + 1, prompt["uuid"])
    assert facts() == fresh_facts(tmp_path)


def test_a_whole_turn_with_parallel_tool_results_and_progress_takes_the_short_path(
    tmp_path: Path, spy: Spy
) -> None:
    sid, records = conversation(3)
    path = setup_session(tmp_path, records, sid)
    prompt = user_record("run two tools", sid=sid, parent=leaf_of(path), timestamp=_ts(100))
    calls = [
        {"type": "tool_use", "id": f"p{k}", "name": "Bash", "input": {"command": "ls"}}
        for k in range(2)
    ]
    asked = assistant_record(calls, sid=sid, parent=prompt["uuid"], timestamp=_ts(101))
    # Two results as siblings (one streamed message), and a progress record beside them.
    first = user_record(tool_result("p0", "a"), sid=sid, parent=asked["uuid"], timestamp=_ts(102))
    second = user_record(tool_result("p1", "b"), sid=sid, parent=asked["uuid"], timestamp=_ts(103))
    progress = {
        "type": "progress",
        "uuid": str(uuid.uuid4()),
        "parentUuid": asked["uuid"],
        "sessionId": sid,
        "timestamp": _ts(104),
        "data": {},
    }
    reply = assistant_record("done", sid=sid, parent=second["uuid"], timestamp=_ts(105))
    append(path, prompt, asked, first, second, progress, reply)
    import_and_compare(tmp_path, spy, "short")
    assert Session.objects.get(path=str(path)).turn_count == 4


def test_bookkeeping_and_sidechain_lines_take_the_turn_around_them(
    tmp_path: Path, spy: Spy
) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    append(path, {"type": "last-prompt", "sessionId": sid, "lastPrompt": "x"})
    import_and_compare(tmp_path, spy, "short")
    side = user_record("subagent task", sid=sid, parent=None, timestamp=_ts(200))
    side["isSidechain"] = True
    append(path, side, b'{"broken\n')
    import_and_compare(tmp_path, spy, "short")


def test_streamed_message_tokens_are_counted_once(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    prompt = user_record("stream", sid=sid, parent=leaf_of(path), timestamp=_ts(100))
    part1 = assistant_record("a", sid=sid, parent=prompt["uuid"], timestamp=_ts(101))
    part2 = assistant_record("b", sid=sid, parent=part1["uuid"], timestamp=_ts(102))
    part2["message"]["id"] = part1["message"]["id"]
    append(path, prompt, part1)
    import_and_compare(tmp_path, spy, "short")
    append(path, part2)
    import_and_compare(tmp_path, spy, "short")


def test_a_title_record_appended_renames_the_session(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    append(path, {"type": "custom-title", "customTitle": "Renamed", "sessionId": sid})
    import_and_compare(tmp_path, spy, "short")
    assert Session.objects.get(path=str(path)).title == "Renamed"


# Everything else: the whole graph, with the same result as a fresh import.


def test_a_rewind_inside_the_cli_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(3)
    path = setup_session(tmp_path, records, sid)
    again = user_record("instead", sid=sid, parent=records[3]["uuid"], timestamp=_ts(500))
    append(path, again)
    import_and_compare(tmp_path, spy, "whole")
    session = Session.objects.get(path=str(path))
    assert session.turn_count == 2
    assert [b["turns"] for b in session.abandoned] == [2]
    # Carrying on from the new leaf is short again.
    reply = assistant_record("ok", sid=sid, parent=again["uuid"], timestamp=_ts(501))
    append(path, reply)
    import_and_compare(tmp_path, spy, "short")


def test_a_progress_record_off_an_older_record_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    progress = {
        "type": "progress",
        "uuid": str(uuid.uuid4()),
        "parentUuid": records[1]["uuid"],
        "sessionId": sid,
        "timestamp": _ts(300),
        "data": {},
    }
    append(path, progress)
    import_and_compare(tmp_path, spy, "whole")


def test_a_newer_leaf_elsewhere_wins_over_an_older_append(tmp_path: Path, spy: Spy) -> None:
    """Claude Code resumes from the newest leaf: an append older than the leaf may lose."""
    sid, records = conversation(2)
    # An abandoned branch whose leaf is newer than anything appended below.
    side = user_record("side", sid=sid, parent=records[3]["uuid"], timestamp=_ts(50))
    active = user_record("main", sid=sid, parent=records[3]["uuid"], timestamp=_ts(60))
    path = setup_session(tmp_path, [*records, side, active], sid)
    assert leaf_of(path) == active["uuid"]
    old = assistant_record("late", sid=sid, parent=active["uuid"], timestamp=_ts(45))
    append(path, old)
    import_and_compare(tmp_path, spy, "whole")
    assert leaf_of(path) == side["uuid"]


def test_a_compaction_boundary_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": str(uuid.uuid4()),
        "parentUuid": None,
        "logicalParentUuid": leaf_of(path),
        "sessionId": sid,
        "timestamp": _ts(400),
        "content": "Conversation compacted",
    }
    summary = user_record(
        "Summary of the above", sid=sid, parent=boundary["uuid"], timestamp=_ts(401)
    )
    summary["isCompactSummary"] = True
    append(path, boundary, summary)
    import_and_compare(tmp_path, spy, "whole")


def test_a_parent_named_before_it_was_written_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    late = str(uuid.uuid4())
    orphan = user_record("orphan", sid=sid, parent=late, timestamp=_ts(600))
    path = setup_session(tmp_path, [*records, orphan], sid)
    append(
        path, assistant_record("x", sid=sid, parent=leaf_of(path), uuid_=late, timestamp=_ts(601))
    )
    import_and_compare(tmp_path, spy, "whole")


def test_a_parent_named_by_an_appended_line_then_written_falls_back(
    tmp_path: Path, spy: Spy
) -> None:
    # A line without a uuid of its own stays outside the graph, so appending it takes
    # the short path; the parent it names is remembered as dangling.
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    late = str(uuid.uuid4())
    note = {"type": "system", "parentUuid": late, "sessionId": sid, "timestamp": _ts(600)}
    append(path, note)
    import_and_compare(tmp_path, spy, "short")
    assert Session.objects.get(path=str(path)).dangling_parents == [late]
    append(
        path, assistant_record("x", sid=sid, parent=leaf_of(path), uuid_=late, timestamp=_ts(601))
    )
    import_and_compare(tmp_path, spy, "whole")


def test_dangling_parents_not_kept_are_found_in_the_rows_once(tmp_path: Path, spy: Spy) -> None:
    # As after an upgrade: the session was imported before dangling parents were kept.
    sid, records = conversation(2)
    late = str(uuid.uuid4())
    orphan = user_record("orphan", sid=sid, parent=late, timestamp=_ts(600))
    path = setup_session(tmp_path, [*records, orphan], sid)
    Session.objects.filter(path=str(path)).update(dangling_parents=None)
    append(path, user_record("more", sid=sid, parent=leaf_of(path), timestamp=_ts(601)))
    import_and_compare(tmp_path, spy, "short")
    assert Session.objects.get(path=str(path)).dangling_parents == [late]
    append(
        path, assistant_record("x", sid=sid, parent=leaf_of(path), uuid_=late, timestamp=_ts(602))
    )
    import_and_compare(tmp_path, spy, "whole")


def test_a_uuid_written_twice_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    twice = assistant_record("again", sid=sid, parent=leaf_of(path), uuid_=records[1]["uuid"])
    append(path, twice)
    import_and_compare(tmp_path, spy, "whole")


def test_a_command_answered_locally_after_all_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    command = user_record(
        "<command-name>/mything</command-name>", sid=sid, parent=leaf_of(path), timestamp=_ts(700)
    )
    append(path, command)
    import_and_compare(tmp_path, spy, "short")
    output = user_record(
        "<local-command-stdout>done</local-command-stdout>",
        sid=sid,
        parent=command["uuid"],
        timestamp=_ts(701),
    )
    append(path, output)
    import_and_compare(tmp_path, spy, "whole")


def test_an_unterminated_last_line_read_again_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid, records = conversation(2)
    path = setup_session(tmp_path, records, sid)
    prompt = user_record("half", sid=sid, parent=leaf_of(path), timestamp=_ts(800))
    data = orjson.dumps(prompt)
    append(path, data[:-1])  # no newline yet: a CLI caught mid-write
    sessions_import(roots=[tmp_path])
    append(path, data[-1:] + b"\n")
    import_and_compare(tmp_path, spy, "whole")


def test_a_session_without_a_turn_falls_back(tmp_path: Path, spy: Spy) -> None:
    sid = str(uuid.uuid4())
    summary = {"type": "summary", "summary": "Earlier work", "leafUuid": str(uuid.uuid4())}
    path = setup_session(tmp_path, [summary, {**summary, "sessionId": sid}], sid)
    append(path, user_record("first", sid=sid, timestamp=_ts(5)))
    import_and_compare(tmp_path, spy, "whole")


def test_a_qwen_rewind_marker_falls_back(tmp_path: Path, spy: Spy) -> None:
    from sessions_app.formats.record_lines import qwen_rewind_line

    sid = str(uuid.uuid4())
    parent = None
    records = []
    for n in range(3):
        for role, kind in (("user", "user"), ("model", "assistant")):
            record = {
                "uuid": str(uuid.uuid4()),
                "parentUuid": parent,
                "sessionId": sid,
                "timestamp": _ts(2 * n + (role == "model")),
                "type": kind,
                "cwd": "/work/q",
                "message": {"role": role, "parts": [{"text": f"{role} {n}"}]},
            }
            records.append(record)
            parent = record["uuid"]
    folder = tmp_path / "-work-q" / "chats"
    folder.mkdir(parents=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(jsonl(records))
    sessions_import(roots=[tmp_path])
    assert Session.objects.get(path=str(path)).turn_count == 3
    more = {**records[-2], "uuid": str(uuid.uuid4()), "parentUuid": parent, "timestamp": _ts(9)}
    append(path, more)
    import_and_compare(tmp_path, spy, "short")
    append(
        path, qwen_rewind_line(session_id=sid, parent_uuid=records[1]["uuid"], payload={}, base={})
    )
    import_and_compare(tmp_path, spy, "whole")
    assert Session.objects.get(path=str(path)).turn_count == 1


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(STEP, max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=30), max_size=3),
)
def test_any_session_imported_in_parts_equals_a_fresh_import(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str], cuts: list[int]
) -> None:
    root = tmp_path_factory.mktemp("root")
    folder = root / "-work-parts"
    folder.mkdir()
    path = folder / f"{uuid.uuid4()}.jsonl"
    lines = build(["prompt", "answer", *steps])
    for cut in sorted(min(c, len(lines)) for c in cuts):
        path.write_bytes(b"".join(lines[:cut]))
        sessions_import(roots=[root])
    path.write_bytes(b"".join(lines))
    sessions_import(roots=[root])
    assert facts() == fresh_facts(root)
    Session.objects.all().delete()
    Project.objects.all().delete()
