"""Usage and cost: each API message counted once, per turn, day, project and family; prices.

Streamed messages (several records with one message id and growing counts) count
once with their largest counts; a fork's copied messages are its parent's; a
model with no known price is listed as unpriced, never as free.
"""

from __future__ import annotations

import os
import uuid
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from sessions_app.formats.usage import MessageUsage, claude_usage, qwen_usage
from sessions_app.models import Session, Usage
from sessions_app.pricing import rates
from sessions_app.rendering.charts import Bar, horizontal_bars, stacked_bars
from sessions_app.selectors.usage import (
    usage_by_day,
    usage_by_project,
)
from sessions_app.selectors.usage.sessions import family_usage, session_usage, turn_usage
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

from .factories import jsonl, user_record

pytestmark = pytest.mark.django_db
SONNET = "claude-sonnet-4-5-20250929"


def streamed(sid: str, parent: str, msg: str, outputs: list[int], *, model: str = SONNET) -> list:
    """One API message written as several records (one per content block), counts growing."""
    records = []
    for n, out in enumerate(outputs):
        records.append(
            {
                "type": "assistant",
                "uuid": str(uuid.uuid4()),
                "parentUuid": parent,
                "sessionId": sid,
                "timestamp": "2026-03-01T10:00:00.000Z",
                "requestId": f"req_{msg}",
                "message": {
                    "id": msg,
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": f"part {n}"}],
                    "usage": {
                        "input_tokens": 100,
                        "output_tokens": out,
                        "cache_creation_input_tokens": 1000,
                        "cache_read_input_tokens": 5000,
                        "cache_creation": {"ephemeral_1h_input_tokens": 400},
                    },
                },
            }
        )
        parent = records[-1]["uuid"]
    return records


def session_with(root: Path, turns: list[tuple[str, list[int]]], *, model: str = SONNET) -> Path:
    sid = str(uuid.uuid4())
    records: list = []
    parent = None
    for n, (prompt, outputs) in enumerate(turns):
        user = user_record(prompt, sid=sid, parent=parent, timestamp="2026-03-01T09:59:00.000Z")
        records.append(user)
        records += streamed(sid, user["uuid"], f"msg_{n}_{sid[:8]}", outputs, model=model)
        parent = records[-1]["uuid"]
    folder = root / "-work-demo"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(jsonl(records))
    old = path.stat().st_mtime - 120
    os.utime(path, (old, old))
    return path


def imported(root: Path, path: Path) -> Session:
    sessions_import(roots=[root])
    report = usage_refresh()
    assert not report.errors, report.errors
    return Session.objects.get(path=str(path))


def test_a_streamed_message_of_four_records_counts_once_with_its_largest_counts(
    tmp_path: Path,
) -> None:
    path = session_with(tmp_path, [("hello", [1, 8, 30, 250])])
    session = imported(tmp_path, path)
    assert Usage.objects.filter(session=session).count() == 1
    total, per_model = session_usage(session)
    assert (total.input, total.output, total.cache_write, total.cache_read) == (
        100,
        250,
        1000,
        5000,
    )
    assert total.cache_write_1h == 400 and total.messages == 1
    # Priced by genai-prices' data: $3 in, $15 out, $3.75 5-minute write, $6 hour write,
    # $0.30 read, per million.
    expected = (100 * 3 + 250 * 15 + 600 * Decimal("3.75") + 400 * 6 + 5000 * Decimal("0.3")) / (
        10**6
    )
    assert total.priced and total.cost == expected
    assert list(per_model) == [SONNET]


def test_counts_per_turn_and_an_append_merged_into_its_message(tmp_path: Path) -> None:
    path = session_with(tmp_path, [("one", [5, 10]), ("two", [7, 70])])
    session = imported(tmp_path, path)
    assert [(n, t.output) for n, t in turn_usage(session)] == [(1, 10), (2, 70)]
    # The CLI goes on writing the second message: its later record lands in the next pass.
    records = [line for line in path.read_bytes().splitlines() if line]
    last = orjson.loads(records[-1])
    more = streamed(str(session.session_id), last["uuid"], last["message"]["id"], [99])
    with path.open("ab") as f:
        f.write(jsonl(more))
    sessions_import(roots=[tmp_path])
    usage_refresh()
    assert [(n, t.output, t.messages) for n, t in turn_usage(session)] == [(1, 10, 1), (2, 99, 1)]


def test_a_fork_adds_no_tokens_of_its_parent_to_the_family(tmp_path: Path) -> None:
    path = session_with(tmp_path, [("one", [10]), ("two", [20]), ("three", [30])])
    source = imported(tmp_path, path)
    fork = session_fork(session=source, turn=2)
    # The fork goes on: one more turn of its own.
    fork_path = Path(fork.path)
    parent = fork.leaf_uuid
    sid = str(fork.session_id)
    user = user_record("four", sid=sid, parent=parent, timestamp="2026-03-01T11:00:00.000Z")
    with fork_path.open("ab") as f:
        f.write(jsonl([user, *streamed(sid, user["uuid"], "msg_fork_own", [40])]))
    sessions_import(roots=[tmp_path])
    usage_refresh()
    assert Usage.objects.filter(session=fork, copy=True).count() == 2
    family = family_usage({s.pk: s for s in Session.objects.filter(pk__in=[source.pk, fork.pk])})
    members = {m.session.pk: m for m in family.members}
    assert members[source.pk].own.output == 60 and members[source.pk].inherited == 0
    assert members[fork.pk].own.output == 40 and members[fork.pk].inherited == 2
    assert family.total.output == 100 and family.total.messages == 4
    # Totals across sessions count each message once too.
    (day,) = usage_by_day()
    assert day.total.output == 100
    assert usage_by_project()[source.project_id].messages == 4
    # The fork's own file holds the copied messages: its page shows what it holds.
    assert session_usage(Session.objects.get(pk=fork.pk))[0].output == 70


def test_a_parent_read_again_hands_its_messages_to_the_fork(tmp_path: Path) -> None:
    path = session_with(tmp_path, [("one", [10]), ("two", [20])])
    source = imported(tmp_path, path)
    fork = session_fork(session=source, turn=1)
    usage_refresh()
    # The parent's file is replaced by something else entirely.
    path.write_bytes(jsonl([user_record("new start", sid=str(source.session_id))]))
    sessions_import(roots=[tmp_path])
    usage_refresh()
    assert not Usage.objects.filter(session=source).exists()
    assert Usage.objects.filter(session=fork, copy=False).count() == 1
    (day,) = usage_by_day()
    assert day.total.output == 10


def test_a_model_without_a_price_is_listed_not_free(tmp_path: Path, settings) -> None:
    path = session_with(tmp_path, [("hello", [10])], model="acme-model-9")
    session = imported(tmp_path, path)
    total, _ = session_usage(session)
    assert total.cost == 0 and not total.priced
    assert total.unpriced == {"acme-model-9": 100 + 10 + 1000 + 5000}
    settings.MODEL_PRICES = {"acme-model-9": {"input": 1, "output": 2}}
    total, _ = session_usage(session)
    assert total.priced
    # Cache kinds without their own price pay the input price.
    assert total.cost == Decimal(100 * 1 + 10 * 2 + 1000 * 1 + 5000 * 1) / 10**6
    assert rates("acme-model-9", None).source.startswith("your setting")


def test_long_context_requests_pay_the_tier_rate() -> None:
    normal = rates(SONNET, None)
    long = rates(SONNET, None, long_context=True)
    assert normal is not None and long is not None
    assert long.input == 2 * normal.input


def test_qwen_usage_splits_the_cached_part_out_of_the_prompt() -> None:
    data = {
        "uuid": "u1",
        "model": "qwen3-coder-plus",
        "usageMetadata": {
            "promptTokenCount": 1000,
            "cachedContentTokenCount": 600,
            "candidatesTokenCount": 50,
            "thoughtsTokenCount": 7,
        },
    }
    assert qwen_usage(data) == MessageUsage("u1", "qwen3-coder-plus", 400, 57, 0, 600, 0)
    assert claude_usage({"message": {"usage": {"input_tokens": -5}, "id": "m"}}) == MessageUsage(
        "m", "", 0, 0, 0, 0, 0
    )
    assert claude_usage({"message": {"content": []}}) is None


def test_the_pages_show_charts_with_their_numbers_and_csv(tmp_path: Path, client: Client) -> None:
    path = session_with(tmp_path, [("one", [10]), ("two", [20])])
    session = imported(tmp_path, path)
    page = client.get("/").content.decode()
    assert 'id="usage-panel"' in page and "<svg" in page and "claude-sonnet-4-5-20250929" in page
    page = client.get(f"/projects/{session.project_id}/").content.decode()
    assert 'id="usage-panel"' in page
    page = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert 'id="usage-turns"' in page and 'id="session-usage"' in page
    panel = client.get(f"/sessions/{session.session_id}/usage-turns/").content.decode()
    assert panel.count('href="?after=') >= 2 and "<svg" in panel
    page = client.get("/usage/").content.decode()
    assert 'id="usage-projects"' in page and "/work/demo" in page
    csv = b"".join(client.get("/usage.csv", {"by": "day"}).streaming_content).decode()
    assert csv.splitlines()[0].startswith("day,model,input_tokens")
    assert "2026-03-01,claude-sonnet-4-5-20250929,200,30,2000,10000,800,2," in csv
    turns = client.get(f"/sessions/{session.session_id}/usage.csv")
    rows = b"".join(turns.streaming_content).decode().splitlines()
    assert rows[0].startswith("part,turn,input_tokens")
    assert rows[1].startswith("active branch,1,100,10,")
    assert rows[2].startswith("active branch,2,100,20,")
    assert client.get("/usage.csv", {"by": "nothing"}).status_code == 400
    page = client.get(f"/sessions/{session.session_id}/lineage/").content.decode()
    assert 'id="family-usage"' in page and "Family total" in page


def test_charts_escape_their_labels() -> None:
    bars = [Bar("<script>x</script>", {"<b>m</b>": 3.0})]
    for svg in (
        stacked_bars(bars, ["<b>m</b>"], title="<i>t</i>"),
        horizontal_bars(bars, ["<b>m</b>"], title="<i>t</i>"),
    ):
        assert "<script>" not in svg and "<b>" not in svg and "<i>" not in svg
        assert "&lt;script&gt;" in svg


def test_prices_set_in_the_environment_are_checked(monkeypatch) -> None:
    from branchboard.settings import env_prices

    monkeypatch.setenv("BB_PRICES", '{"m": {"input": 1, "output": 2.5}}')
    assert env_prices("BB_PRICES") == {"m": {"input": 1, "output": 2.5}}
    for bad in ("not json", '["m"]', '{"m": {"inptu": 1}}', '{"m": {"input": -1}}'):
        monkeypatch.setenv("BB_PRICES", bad)
        with pytest.raises(ImproperlyConfigured):
            env_prices("BB_PRICES")


def test_unit_rates_give_what_genai_prices_calc_price_gives() -> None:
    from datetime import date, datetime

    from genai_prices import Usage as Priced
    from genai_prices import calc_price

    cases = [(SONNET, False), ("claude-opus-4-1", False), (SONNET, True)]
    for model, long in cases:
        i, o, w, r = (250_000, 900, 3000, 7000) if long else (1200, 900, 3000, 7000)
        ours = rates(model, date(2026, 3, 1), long_context=long)
        assert ours is not None
        theirs = calc_price(
            Priced(
                input_tokens=i + w + r, output_tokens=o, cache_write_tokens=w, cache_read_tokens=r
            ),
            model_ref=model,
            genai_request_timestamp=datetime(2026, 3, 1, 12),
        )
        assert ours.cost(i, o, w, r) == theirs.total_price, model


def test_numbers_for_people() -> None:
    from sessions_app.rendering.numbers import tokens, usd

    assert [tokens(n) for n in (0, 950, 12_345, 4_560_000, 123_456_789, 2_000_000_000)] == [
        "0", "950", "12.3k", "4.56M", "123M", "2B"
    ]  # fmt: skip
    assert [usd(v) for v in (0, Decimal("0.0042"), Decimal("1.236"), Decimal("12345.6"))] == [
        "$0", "$0.0042", "$1.24", "$12,346"
    ]  # fmt: skip
