"""`/usage/activity/`: your work at a glance, a calendar heatmap of the last year's turns or
cost per day across agents and projects, with its numbers per month beside it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from ...formats import AGENTS
from ...rendering.heatmap import calendar_heatmap
from ...rendering.numbers import usd
from ...selectors.usage import Totals
from ...selectors.usage.activity import DayTotal, activity_by_day, activity_totals
from . import BadFilter, _refused, usage_filter

MEASURES = ("turns", "cost")
YEAR = 365


def _value(day: DayTotal, measure: str) -> float:
    return float(day.totals.cost) if measure == "cost" else float(day.turns)


def _describe(day: date, turns: int, totals: Totals) -> str:
    cost = usd(totals.cost) + ("" if totals.priced else " + unpriced")
    return f"{day:%a %Y-%m-%d}: {turns} turn{'s' * (turns != 1)}, {cost}"


def _agent(kept: dict[str, str], agent: str, measure: str) -> dict[str, str]:
    return (
        {k: v for k, v in kept.items() if k != "agent"}
        | ({"agent": agent} if agent else {})
        | {"measure": measure}
    )


@require_safe
def usage_activity(request: HttpRequest) -> HttpResponse:
    """`/usage/activity/[?measure=turns|cost&project=N&agent=A&until=D]`: the year to `until`
    (today, UTC, when not given)."""
    measure = request.GET.get("measure", "turns")
    try:
        if measure not in MEASURES:
            raise BadFilter(f"measure: {measure!r} is not one of {', '.join(MEASURES)}")
        chosen = usage_filter(request.GET)
    except BadFilter as exc:
        return _refused(request, exc)
    last = chosen.until or datetime.now(UTC).date()
    first = max(chosen.since or date.min, last - timedelta(days=YEAR - 1))
    days = activity_totals(
        activity_by_day(
            project=chosen.project.pk if chosen.project else None,
            agent=chosen.agent,
            since=first,
            until=last,
        )
    )
    by_day = {d.day: d for d in days}
    empty = Totals()

    def describe(day: date, _value: float) -> str:
        found = by_day.get(day)
        return _describe(day, found.turns if found else 0, found.totals if found else empty)

    noun = "cost" if measure == "cost" else "turns"
    heatmap = calendar_heatmap(
        {d.day: _value(d, measure) for d in days},
        first=first,
        last=last,
        title=f"{noun.capitalize()} per day, {first} to {last}",
        describe=describe,
    )
    months: dict[str, DayTotal] = {}
    total = DayTotal(first)
    for d in days:
        month = months.setdefault(f"{d.day:%Y-%m}", DayTotal(d.day))
        for into in (month, total):
            into.turns += d.turns
            into.totals.merge(d.totals)
    kept: dict[str, str] = {
        k: str(v) for k, v in request.GET.items() if k in ("project", "agent", "until")
    }
    window = {k: v for k, v in kept.items() if k != "until"} | {
        "since": str(first),
        "until": str(last),
    }
    context = {
        "chosen": chosen,
        "measure": measure,
        "heatmap": heatmap,
        "first": first,
        "last": last,
        "months": sorted(months.items(), reverse=True),
        "total": total,
        "active_days": sum(1 for d in days if d.turns or d.totals.messages),
        "busiest": max(days, key=lambda d: (_value(d, measure), d.day), default=None),
        "switch": {m: urlencode(kept | {"measure": m}) for m in MEASURES},
        # Every agent, or one: the same year and measure.
        "agents": [
            (name or "all agents", name == chosen.agent, urlencode(_agent(kept, name, measure)))
            for name in ("", *AGENTS)
        ],
        "csv_query": urlencode({"by": "activity", **window}),
    }
    return render(request, "sessions_app/usage_activity.html", context)
