"""Your work per day across agents and projects: turns and cost per day and project, as a
selector, as `/usage.csv?by=activity` and as `GET /api/usage/activity`, over the fixture
corpus of all four agents."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.test import Client

from sessions_app.models import Project, Record, Session
from sessions_app.selectors.usage import Totals, usage_by_day
from sessions_app.selectors.usage.activity import activity_by_day, activity_totals
from sessions_app.services.branching import session_fork
from sessions_app.services.usage import usage_refresh

from .four_agents import AGENTS, four_agents_imported  # noqa: F401 (the fixture `four`)

pytestmark = pytest.mark.django_db


def _turns(agent: str = "") -> int:
    return sum(a.turns for a in activity_by_day(agent=agent))


def _prompts(agent: str) -> int:
    """The prompts of the main sessions of `agent` that start a turn."""
    return Record.objects.filter(
        starts_turn=True, sidechain=False, session__is_subagent=False, session__agent=agent
    ).count()


def test_the_cost_is_the_usage_pages_per_agent(four: None) -> None:
    for agent in ("", *AGENTS):
        page = Totals()
        for day in usage_by_day(agent=agent):
            page.merge(day.total)
        found = activity_by_day(agent=agent)
        total = Totals()
        for a in found:
            total.merge(a.totals)
        assert page.messages > 0
        assert total.messages == page.messages, agent
        assert total.tokens == page.tokens
        assert total.cost == page.cost
        # Each agent's turns are its main sessions' prompts (no fork in the corpus holds
        # copied turns of another but those marked, checked below).
        if agent:
            assert 0 < _turns(agent) <= _prompts(agent)
            projects = Project.objects.in_bulk({a.project_id for a in found})
            assert {p.agent for p in projects.values()} == {agent}
    assert _turns() == sum(_turns(a) for a in AGENTS)
    days = activity_totals(activity_by_day())
    # Every day with usage, and the days with prompts but no reply counted (none priced).
    listed = [d.day for d in days]
    assert listed == sorted(listed)
    assert {d.day for d in usage_by_day() if d.day} <= set(listed)
    assert all(d.turns > 0 for d in days if d.totals.messages == 0)


def test_a_fork_adds_no_turns_and_no_cost(four: None) -> None:
    source = max(
        Session.objects.filter(agent="claude", is_subagent=False, parent=None),
        key=lambda s: s.usage.filter(copy=False).count() if s.turn_count >= 3 else -1,
    )
    assert source.turn_count >= 3
    before_turns = _turns()
    before = Totals()
    for a in activity_by_day():
        before.merge(a.totals)

    fork = session_fork(session=source, turn=3)
    usage_refresh()

    # The fork holds the copied prompts, but they were sent once.
    assert Record.objects.filter(session=fork, starts_turn=True).count() >= 2
    assert _turns() == before_turns
    after = Totals()
    for a in activity_by_day():
        after.merge(a.totals)
    assert (after.messages, after.cost) == (before.messages, before.cost)


def test_the_csv_and_the_api_give_the_same_numbers(four: None, client: Client, token: str) -> None:
    found = activity_by_day()
    response = client.get("/usage.csv?by=activity")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == len(found)
    assert {"day", "project", "agent", "turns", "cost_usd", "messages"} <= set(rows[0])
    assert sum(int(r["turns"]) for r in rows) == _turns()
    assert {r["agent"] for r in rows} == set(AGENTS)

    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    answer = client.get("/api/usage/activity", **auth)
    assert answer.status_code == 200
    body = answer.json()
    assert body["totals"]["turns"] == _turns()
    assert len(body["days"]) == len(rows)
    for row, day in zip(rows, body["days"], strict=True):
        assert (row["day"], row["agent"], int(row["turns"])) == (
            day["day"] or "",
            day["agent"],
            day["turns"],
        )
        assert Decimal(row["cost_usd"]) == Decimal(day["cost_usd"])
    total_cost = sum(Decimal(d["cost_usd"]) for d in body["days"])
    assert total_cost == pytest.approx(Decimal(body["totals"]["cost_usd"]), abs=Decimal("1e-5"))

    codex = client.get("/api/usage/activity?agent=codex", **auth).json()
    assert codex["days"] and {d["agent"] for d in codex["days"]} == {"codex"}
    assert codex["totals"]["turns"] == _turns("codex")
    last = max(d["day"] for d in body["days"] if d["day"])
    one = client.get(f"/api/usage/activity?since={last}&until={last}", **auth).json()
    assert {d["day"] for d in one["days"]} == {last}


def test_the_api_refuses_without_a_token_or_with_a_bad_filter(four: None, token: str) -> None:
    anonymous = Client()
    assert anonymous.get("/api/usage/activity").status_code == 401
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    bad = anonymous.get("/api/usage/activity?since=yesterday", **auth)
    assert bad.status_code == 400 and "since" in bad.json()["error"]
    assert anonymous.get("/api/usage/activity?project=999999", **auth).status_code == 404
    assert anonymous.post("/api/usage/activity", **auth).status_code == 405
