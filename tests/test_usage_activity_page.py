"""`/usage/activity/`: a calendar heatmap of the last year's turns or cost per day, drawn on
the server (no script, no inline style), its numbers per month beside it, linked from
`/usage/`."""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.test import Client

from sessions_app.rendering.heatmap import levels
from sessions_app.selectors.usage.activity import activity_by_day, activity_totals

from .four_agents import four_agents_imported  # noqa: F401 (the fixture `four`)

pytestmark = pytest.mark.django_db
UNTIL = "2026-11-30"  # the corpus's last days are in the year before it


def _heatmap(html: str) -> str:
    found = re.search(r'<div class="heatmap-box" id="activity-heatmap">(.*?)</div>', html, re.S)
    assert found is not None
    return found.group(1)


def test_levels_are_quartiles_of_the_days_with_any() -> None:
    days = {date(2026, 1, d): float(v) for d, v in enumerate([0, 1, 2, 3, 4, 5, 6, 7, 8], 1)}
    found = levels(days)
    assert found[date(2026, 1, 1)] == 0
    assert [found[date(2026, 1, d)] for d in range(2, 10)] == [1, 1, 2, 2, 3, 3, 4, 4]


def test_the_year_of_days_with_each_days_numbers(four: None, client: Client) -> None:
    response = client.get(f"/usage/activity/?until={UNTIL}")
    assert response.status_code == 200
    html = response.content.decode()
    heatmap = _heatmap(html)
    assert heatmap.count("<rect") == 365  # 2025-12-01 .. 2026-11-30
    days = activity_totals(activity_by_day(since=date(2025, 12, 1), until=date(2026, 11, 30)))
    assert days
    for day in days:
        cell = re.search(
            rf'class="heat heat-(\d)"><title>\w+ {day.day}: (\d+) turns?, ([^<]*)</title>', heatmap
        )
        assert cell is not None, day.day
        assert int(cell.group(2)) == day.turns
        assert int(cell.group(1)) >= (1 if day.turns else 0)
    quiet = re.search(
        r'class="heat heat-(\d)"><title>\w+ 2026-03-03: 0 turns, \$0</title>', heatmap
    )
    assert quiet is not None and quiet.group(1) == "0"
    total = sum(d.turns for d in days)
    assert f"{total} turns" in html
    assert 'id="activity-months"' in html and "2026-11" in html
    assert "style=" not in heatmap and "<script" not in heatmap
    assert "by=activity" in html


def test_cost_filters_and_refusals(four: None, client: Client) -> None:
    by_cost = client.get(f"/usage/activity/?until={UNTIL}&measure=cost&agent=codex")
    assert by_cost.status_code == 200
    html = by_cost.content.decode()
    assert "Cost per day" in html and "codex sessions only" in html
    # The other agents, the same year and measure, one click away.
    assert f'href="?until={UNTIL}&amp;agent=gemini&amp;measure=cost">gemini</a>' in html
    assert f'href="?until={UNTIL}&amp;measure=cost">all agents</a>' in html
    assert '<strong aria-current="true">codex</strong>' in html
    days = activity_totals(activity_by_day(agent="codex", since=date(2025, 12, 1)))
    busiest = max(days, key=lambda d: (d.totals.cost, d.day))
    assert f"the busiest: {busiest.day}" in html
    assert client.get("/usage/activity/?measure=bytes").status_code == 400
    assert client.get("/usage/activity/?until=tomorrow").status_code == 400
    assert client.get("/usage/activity/?project=999999").status_code == 404


def test_the_usage_page_links_it(four: None, client: Client) -> None:
    html = client.get("/usage/").content.decode()
    assert 'href="/usage/activity/"' in html
