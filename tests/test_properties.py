"""Property tests: whatever the session, the database agrees with the pure reader."""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

from .reading import analyse_file

pytestmark = pytest.mark.django_db

STEP = st.sampled_from(
    ["prompt", "answer", "tool", "meta", "progress", "rewind", "bookkeeping", "junk"]
)


def build(steps: list[str]) -> list[bytes]:
    """Turn a list of steps into session lines, rewinds included."""
    sid = str(uuid.uuid4())
    lines: list[bytes] = []
    chain: list[str] = []  # uuids on the current branch
    for n, step in enumerate(steps):
        ts = f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
        parent = chain[-1] if chain else None
        rec: dict = {
            "uuid": str(uuid.uuid4()),
            "parentUuid": parent,
            "sessionId": sid,
            "timestamp": ts,
        }
        if step == "prompt":
            rec |= {"type": "user", "message": {"role": "user", "content": f"p{n}"}}
        elif step == "answer":
            rec |= {
                "type": "assistant",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
            }
        elif step == "tool":
            rec |= {
                "type": "user",
                "message": {
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]
                },
            }
        elif step == "meta":
            rec |= {"type": "user", "isMeta": True, "message": {"content": "meta"}}
        elif step == "progress":
            rec |= {"type": "progress", "data": {}}
            lines.append(orjson.dumps(rec) + b"\n")
            continue  # a side branch: the chain goes on from its parent
        elif step == "rewind":
            chain = chain[: len(chain) // 2]
            continue
        elif step == "bookkeeping":
            lines.append(orjson.dumps({"type": "last-prompt", "sessionId": sid}) + b"\n")
            continue
        else:
            lines.append(b'{"broken\n')
            continue
        lines.append(orjson.dumps(rec) + b"\n")
        chain.append(rec["uuid"])
    return lines


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(STEP, max_size=40), cut=st.integers(min_value=0, max_value=40))
def test_import_agrees_with_reader_even_when_read_in_two_parts(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str], cut: int
) -> None:
    root = tmp_path_factory.mktemp("root")
    folder = root / "-work-prop"
    folder.mkdir()
    path = folder / f"{uuid.uuid4()}.jsonl"
    lines = build(steps)
    cut = min(cut, len(lines))
    path.write_bytes(b"".join(lines[:cut]))
    sessions_import(roots=[root])
    path.write_bytes(b"".join(lines))
    sessions_import(roots=[root])

    _nodes, analysis = analyse_file(path)
    session = Session.objects.get(path=str(path))
    assert session.turn_count == analysis.turn_count
    stored = list(session.records.order_by("line").values_list("turn", "active"))
    assert stored == list(zip(analysis.turn, analysis.active, strict=True))
    assert session.record_count == len(lines)
    Session.objects.all().delete()


def test_a_rewound_branch_off_a_side_branch_is_abandoned(tmp_path: Path) -> None:
    """p0 -> a1 -> p2 -> p3 rewound to a1, a5 after a1, rewound to p0, then p7.

    The side branch a1 -> a5 holds no prompt (part of turn 1), but p2 -> p3, hanging
    off it, was left by a rewind: abandoned, not prompts of turn 1.
    """
    steps = ["prompt", "answer", "prompt", "prompt", "rewind", "answer", "rewind", "prompt"]
    folder = tmp_path / "-work-prop"
    folder.mkdir()
    path = folder / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(b"".join(build(steps)))
    nodes, analysis = analyse_file(path)
    assert analysis.turn_count == 2
    assert [(b.at_turn, b.turns, b.prompt) for b in analysis.abandoned] == [(2, 2, "p2")]
    assert [analysis.active[i] for i in range(len(nodes))] == [True, True, False, False, True, True]
    assert analysis.turn == [1, 1, None, None, 1, 2]


def test_generated_session_with_rewind_has_abandoned_branch(tmp_path: Path) -> None:
    lines = build(["prompt", "answer", "prompt", "answer", "rewind", "prompt", "answer"])
    folder = tmp_path / "-w"
    folder.mkdir()
    path = folder / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(b"".join(lines))
    _, analysis = analyse_file(path)
    assert analysis.turn_count == 2
    assert [(b.at_turn, b.turns) for b in analysis.abandoned] == [(2, 1)]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(STEP, min_size=1, max_size=40), pick=st.integers(min_value=1, max_value=40))
# Found by this test: a side branch without prompts hid a rewound branch hanging off it
# (its prompts were counted in turn 1, and the fork of turn 1 was refused).
@example(steps=["prompt", "prompt", "rewind", "answer", "rewind", "prompt"], pick=1)
def test_fork_rows_equal_a_fresh_import_of_the_fork(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str], pick: int
) -> None:
    """A fork is registered from its source's rows; they must be what an import would find."""
    import os
    import time

    from sessions_app.services.branching import session_fork

    root = tmp_path_factory.mktemp("root")
    folder = root / "-work-prop"
    folder.mkdir()
    path = folder / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(b"".join(build(["prompt", "answer", *steps])))
    old = time.time() - 60
    os.utime(path, (old, old))
    sessions_import(roots=[root])
    source = Session.objects.select_related("project").get(path=str(path))
    if source.turn_count == 0:  # a rewind can leave a branch with no prompt on it
        Session.objects.all().delete()
        return
    turn = 1 + (pick - 1) % source.turn_count
    fork = session_fork(session=source, turn=turn)
    nodes, analysis = analyse_file(Path(fork.path))
    assert fork.turn_count == analysis.turn_count == turn
    stored = list(
        fork.records.order_by("line").values_list("line", "turn", "active", "kind", "uuid")
    )
    expected = [
        (n.line, analysis.turn[i], analysis.active[i], n.kind, n.uuid or "")
        for i, n in enumerate(nodes)
    ]
    assert stored == expected
    data = Path(fork.path).read_bytes()
    for record in fork.records.all():
        assert data[record.offset : record.offset + record.length].endswith(b"\n")
    # A later import finds the file as registered and changes nothing.
    report = sessions_import(roots=[root])
    assert report.sessions == 0
    Session.objects.all().delete()


OPS = st.lists(
    st.tuples(
        st.sampled_from(["fork", "before", "branch", "rewind", "undo", "append"]), st.integers(1, 6)
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_nothing_is_ever_lost(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    """After any sequence of branch, fork, rewind and undo, every record that ever existed is in some file."""
    from django.test import override_settings

    with override_settings(BRANCHBOARD_BUSY_SECONDS=0):
        _run_operations(tmp_path_factory.mktemp("root"), ops)


def _run_operations(root: Path, ops: list[tuple[str, int]]) -> None:
    import os
    import time

    from sessions_app.services.branching import (
        BranchError,
        session_fork,
        session_rewind,
        session_rewind_undo,
    )

    folder = root / "-work-lost"
    folder.mkdir()
    path = folder / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(
        b"".join(
            build(
                [
                    "prompt",
                    "answer",
                    "prompt",
                    "tool",
                    "answer",
                    "prompt",
                    "answer",
                    "prompt",
                    "answer",
                ]
            )
        )
    )
    seen: set[str] = set()

    def everything() -> set[str]:
        found = set()
        for file in folder.glob("*.jsonl"):
            for line in file.read_bytes().splitlines():
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(record, dict) and record.get("uuid"):
                    found.add(record["uuid"])
        return found

    old = time.time() - 60
    os.utime(path, (old, old))
    sessions_import(roots=[root])
    seen |= everything()
    for op, turn in ops:
        source = Session.objects.select_related("project").get(path=str(path))
        try:
            if op == "fork":
                session_fork(session=source, turn=turn)
            elif op == "before":
                session_fork(session=source, turn=turn, include_turn=False)
            elif op == "branch":
                session_fork(session=source)
            elif op == "rewind":
                session_rewind(session=source, turn=turn)
            elif op == "undo":
                session_rewind_undo(session=source)
            else:  # the CLI carries on in the session
                last = Session.objects.get(pk=source.pk).leaf_uuid or None
                extra = {
                    "type": "user",
                    "uuid": str(uuid.uuid4()),
                    "parentUuid": last,
                    "sessionId": str(source.session_id),
                    "timestamp": "2027-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": "more"},
                }
                with path.open("ab") as f:
                    f.write(orjson.dumps(extra) + b"\n")
                sessions_import(roots=[root])
        except BranchError:
            pass  # a refusal writes nothing; that is checked below like everything else
        now = everything()
        assert seen <= now, f"lost after {op} {turn}: {sorted(seen - now)[:3]}"
        seen |= now
    Session.objects.all().delete()
