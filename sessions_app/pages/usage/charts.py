"""What the usage panels show, ready for a template: charts (SVG) and the rows beside them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from ...models import Project, Session
from ...pricing import bundled_source
from ...rendering.charts import Bar, legend, stacked_bars
from ...rendering.numbers import tokens as tokens_text
from ...rendering.numbers import usd
from ...selectors.usage import DayUsage, Totals, usage_by_day, usage_by_model
from ...selectors.usage.sessions import turn_usage

CHART_DAYS = 30
# Turns one page of a session's "Usage per turn" panel shows (its chart and its rows): a
# 25,000-turn session's whole table was 6.9 MB of HTML and 13 s.
TURNS_PAGE = 200


def day_chart(days: list[DayUsage], *, title: str) -> dict:
    """The per-day chart (stacked by model; cost, or tokens where a model has no price)."""
    shown = days[-CHART_DAYS:]
    models = _models_by_size(m for d in shown for m in d.models.items())
    by_cost = all(d.total.priced for d in shown)
    bars = [
        Bar(
            d.day.strftime("%m-%d") if d.day else "?",
            {m: float(t.cost) if by_cost else float(t.tokens) for m, t in d.models.items()},
        )
        for d in shown
    ]
    fmt = (lambda v: usd(v)) if by_cost else (lambda v: tokens_text(v))
    measure = "cost" if by_cost else "tokens"
    return {
        "svg": stacked_bars(bars, models, title=f"{title}: {measure} per day, by model", fmt=fmt),
        "legend": legend(models),
        "measure": measure,
        "days": list(reversed(shown)),
    }


def _models_by_size(pairs: Iterable[tuple[str, Totals]]) -> list[str]:
    size: dict[str, int] = {}
    for model, totals in pairs:
        size[model] = size.get(model, 0) + totals.tokens
    return sorted(size, key=lambda m: -size[m])


def _total(days: list[DayUsage]) -> Totals:
    total = Totals()
    for d in days:
        total.merge(d.total)
    return total


def usage_context(
    project: Project | None = None,
    *,
    agent: str = "",
    since: date | None = None,
    until: date | None = None,
) -> dict:
    """What a usage panel shows: the chart of the last days, totals, per model."""
    days = usage_by_day(
        project=project.pk if project else None, agent=agent, since=since, until=until
    )
    return {
        "usage_chart": day_chart(days, title=project.path if project else "All projects")
        if days
        else None,
        "usage_total": _total(days),
        "usage_models": usage_by_model(days=days),
        "price_source": bundled_source(),
    }


def turn_chart(session: Session, first: int = 1) -> dict | None:
    """The per-turn chart of TURNS_PAGE turns of a session's active branch from turn
    `first`, with their rows and where the pages before and after it start; None when
    the session has no usage per turn at all."""
    last = min(first + TURNS_PAGE - 1, max(session.turn_count, first))
    turns = turn_usage(session, first=first, last=last)
    page = {
        "turns": turns,
        "first": first,
        "last": last,
        "previous": max(1, first - TURNS_PAGE) if first > 1 else None,
        "next": last + 1 if last < session.turn_count else None,
    }
    if not turns:
        return page if page["previous"] or page["next"] else None
    by_cost = all(t.priced for _, t in turns)
    kinds = ["cost"] if by_cost else ["input", "output", "cache write", "cache read"]
    bars = [
        Bar(
            str(n),
            {"cost": float(t.cost)}
            if by_cost
            else {
                "input": t.input,
                "output": t.output,
                "cache write": t.cache_write,
                "cache read": t.cache_read,
            },
        )
        for n, t in turns
    ]
    fmt = (lambda v: usd(v)) if by_cost else (lambda v: tokens_text(v))
    page["svg"] = stacked_bars(bars, kinds, title="Usage per turn", fmt=fmt, height=140)
    page["legend"] = legend(kinds) if not by_cost else []
    return page
