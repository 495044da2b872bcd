"""`manage.py usage daily|monthly|session`: the numbers of `/usage/`, over the fixture corpus
of all four agents, as a table and as JSON."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from sessions_app.models import Session, Usage
from sessions_app.selectors.usage import Totals, usage_by_day

from .four_agents import AGENTS, four_agents_imported  # noqa: F401 (the fixture `four`)

pytestmark = pytest.mark.django_db


def _usage(*args: str) -> str:
    out = io.StringIO()
    call_command("usage", *args, stdout=out)
    return out.getvalue()


def _page_total(agent: str = "") -> Totals:
    total = Totals()
    for day in usage_by_day(agent=agent):
        total.merge(day.total)
    return total


@pytest.mark.parametrize("period", ["daily", "monthly", "session"])
def test_the_totals_are_the_usage_pages(four: None, period: str) -> None:
    for agent in ("", *AGENTS):
        page = _page_total(agent)
        assert page.messages > 0, agent
        args = [period, "--json"] + (["--agent", agent] if agent else [])
        document = json.loads(_usage(*args))
        totals = document["totals"]
        assert totals["messages"] == page.messages, (agent, period)
        assert totals["inputTokens"] == page.input
        assert totals["outputTokens"] == page.output
        assert totals["cacheCreationTokens"] == page.cache_write
        assert totals["cacheReadTokens"] == page.cache_read
        assert totals["totalTokens"] == page.tokens
        assert Decimal(str(totals["totalCost"])) == pytest.approx(page.cost, abs=Decimal("1e-5"))
        rows = document[{"daily": "daily", "monthly": "monthly", "session": "sessions"}[period]]
        # The rows add up to the total: no message counted twice, none left out.
        assert sum(r["messages"] for r in rows) == page.messages
        assert sum(r["outputTokens"] for r in rows) == page.output


def test_copies_made_by_a_fork_count_once(four: None) -> None:
    # The corpus holds forks: their copied messages are in `Usage` but not in the totals.
    copied = Usage.objects.filter(copy=True).count()
    assert copied > 0
    document = json.loads(_usage("daily", "--json"))
    assert document["totals"]["messages"] == Usage.objects.filter(copy=False).count()


def test_the_json_shape(four: None) -> None:
    daily = json.loads(_usage("daily", "--json"))
    assert set(daily) == {"daily", "totals"}
    day = daily["daily"][0]
    assert {
        "date",
        "inputTokens",
        "outputTokens",
        "cacheCreationTokens",
        "cacheReadTokens",
        "totalTokens",
        "totalCost",
        "modelsUsed",
        "modelBreakdowns",
    } <= set(day)
    assert len(day["date"]) == 10
    breakdown = day["modelBreakdowns"][0]
    assert {"modelName", "inputTokens", "outputTokens", "totalCost"} <= set(breakdown)
    assert sum(b["totalTokens"] for b in day["modelBreakdowns"]) == day["totalTokens"]
    monthly = json.loads(_usage("monthly", "--json"))
    assert all(len(m["month"]) == 7 for m in monthly["monthly"])
    sessions = json.loads(_usage("session", "--json"))["sessions"]
    assert {s["agent"] for s in sessions} == set(AGENTS)
    assert all(s["sessionId"] and s["lastActivity"] for s in sessions)
    # A subagent's file counts in its session: no subagent has a row of its own.
    ids = [s["sessionId"] for s in sessions]
    assert len(ids) == len(set(ids))
    owner = Session.objects.get(session_id__startswith="4d5611e5", is_subagent=False)
    files = Session.objects.filter(session_id=owner.session_id, namespace="")
    assert files.filter(is_subagent=True).count() == 2
    (row,) = (s for s in sessions if s["sessionId"] == str(owner.session_id))
    assert row["messages"] == Usage.objects.filter(session__in=files, copy=False).count()


def test_since_until_and_the_table(four: None, client: Client) -> None:
    days = [d.day for d in usage_by_day() if d.day is not None]
    first, last = days[0], days[-1]
    one = json.loads(_usage("daily", "--json", "--since", str(last), "--until", str(last)))
    assert [d["date"] for d in one["daily"]] == [str(last)]
    table = _usage("daily", "--since", str(first), "--until", str(last))
    lines = table.splitlines()
    assert lines[0].split()[:2] == ["Date", "Models"]
    assert "Cache Create" in lines[0] and "Cost (USD)" in lines[0]
    assert lines[-1].startswith("Total") or lines[-2].startswith("Total")
    total = _page_total()
    assert f"{total.tokens:,}" in table
    assert sum(line[:10] == str(d) for line in lines for d in days) == len(set(days))
    # The CSV the page offers agrees with the command, day by day.
    csv = b"".join(client.get("/usage.csv?by=day").streaming_content).decode()
    assert csv.count(str(last)) == len(one["daily"][0]["modelBreakdowns"])


def test_text_from_a_file_cannot_drive_the_terminal(four: None) -> None:
    session = Session.objects.filter(is_subagent=False, usage__copy=False).first()
    assert session is not None
    Usage.objects.filter(session=session).update(model="evil\x1b]0;owned\x07")
    table = _usage("daily")
    assert "\x1b" not in table and "\x07" not in table
    assert "evil\\x1b]0;owned\\x07" in table


def test_a_bad_date_or_project_is_refused(four: None) -> None:
    with pytest.raises(CommandError, match="not a date"):
        _usage("daily", "--since", "2026-13-01")
    with pytest.raises(CommandError, match="no project"):
        _usage("daily", "--project", "/nowhere")


def test_one_project(four: None) -> None:
    session = Session.objects.filter(agent="codex", is_subagent=False).first()
    assert session is not None
    project = session.project
    page = Totals()
    for day in usage_by_day(project=project.pk):
        page.merge(day.total)
    for name in (str(project.pk), project.folder):
        document = json.loads(_usage("session", "--json", "--project", name, "--agent", "codex"))
        assert document["totals"]["messages"] == page.messages
        assert {s["project"] for s in document["sessions"]} <= {project.path or project.folder}
