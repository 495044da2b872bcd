"""Tokens and cost: per day and model, per project, per session, per turn, per family.

Every figure comes from `Usage` rows: one per API message and session. Totals
across sessions leave out the rows marked `copy` (a message a fork copied from
its parent), so each message counts once. Cost is priced per model, per day and
per long-context tier (`pricing`); tokens of a model without a price are kept
apart as unpriced, never counted as free.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from django.db import connection

from ...models import Session, Usage
from ...pricing import LONG_CONTEXT, rates

TOKEN_KINDS = ("input", "output", "cache_write", "cache_read", "cache_write_1h")


@dataclass
class Totals:
    """Tokens of each kind, messages, and their cost (without the unpriced models' share)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    cache_write_1h: int = 0  # of cache_write
    messages: int = 0
    reasoning: int = 0  # of output: billed as output, so priced with it, never again
    cost: Decimal = field(default_factory=Decimal)
    unpriced: dict[str, int] = field(default_factory=dict)  # model -> tokens with no price
    sources: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    @property
    def priced(self) -> bool:
        """Whether the cost covers every token (no model without a price)."""
        return not self.unpriced

    def add(self, model: str, day: date | None, long: bool, counts: tuple[int, ...]) -> None:
        """Adds (input, output, cache write, cache read, hour-long cache write, messages[,
        reasoning]) of `model` on `day`; the reasoning is part of the output, priced as it."""
        i, o, w, r, h, n, *rest = counts
        self.reasoning += rest[0] if rest else 0
        self.input += i
        self.output += o
        self.cache_write += w
        self.cache_read += r
        self.cache_write_1h += h
        self.messages += n
        if i + o + w + r == 0:
            return
        price = rates(model, day, long_context=long)
        if price is None:
            name = model or "(no model: the file names none)"
            self.unpriced[name] = self.unpriced.get(name, 0) + i + o + w + r
        else:
            self.cost += price.cost(i, o, w, r, h)
            self.sources.add(price.source)

    def merge(self, other: Totals) -> None:
        for name in (*TOKEN_KINDS, "messages", "reasoning"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost += other.cost
        for model, tokens in other.unpriced.items():
            self.unpriced[model] = self.unpriced.get(model, 0) + tokens
        self.sources |= other.sources


def _day_sql() -> str:
    if connection.vendor == "postgresql":
        return "(u.at AT TIME ZONE 'UTC')::date"
    return "date(u.at)"


def grouped_usage(extra_group: str | None, joins: str, where: str, params: list) -> list[tuple]:
    """(extra, model, day, long, (in, out, cache write, cache read, cache write 1h, messages,
    reasoning of out)) per group."""
    table = Usage._meta.db_table
    day = _day_sql()
    long = f"(u.input_tokens + u.cache_write_tokens + u.cache_read_tokens) > {LONG_CONTEXT}"
    group = f"{extra_group}, " if extra_group else ""
    sql = (
        f"SELECT {extra_group or 'NULL'}, u.model, {day}, {long}, SUM(u.input_tokens), "  # noqa: S608
        "SUM(u.output_tokens), SUM(u.cache_write_tokens), SUM(u.cache_read_tokens), "
        "SUM(u.cache_write_1h_tokens), COUNT(*), SUM(u.reasoning_tokens) "
        f"FROM {table} u {joins} WHERE {where} "
        f"GROUP BY {group}u.model, {day}, {long}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    out = []
    for extra, model, day_value, is_long, *counts in rows:
        if isinstance(day_value, str):
            day_value = date.fromisoformat(day_value)
        elif isinstance(day_value, datetime):
            day_value = day_value.date()
        out.append((extra, model or "", day_value, bool(is_long), tuple(int(c) for c in counts)))
    return out


@dataclass
class DayUsage:
    day: date | None
    models: dict[str, Totals]
    total: Totals


def usage_where(
    *, project: int | None, agent: str, since: date | None, until: date | None
) -> tuple[str, str, list[object]]:
    """The joins, condition and parameters of a filter (every message counted once)."""
    joins, where, params = "", 'NOT u."copy"', list[object]()
    if project is not None or agent:
        joins = f"JOIN {Session._meta.db_table} s ON s.id = u.session_id"
    if project is not None:
        where += " AND s.project_id = %s"
        params.append(project)
    if agent:
        where += " AND s.agent = %s"
        params.append(agent)
    # Compared as days, never as a day plus one: 9999-12-31 is a day like any other.
    if since is not None:
        where += f" AND {_day_sql()} >= %s"
        params.append(connection.ops.adapt_datefield_value(since))
    if until is not None:
        where += f" AND {_day_sql()} <= %s"
        params.append(connection.ops.adapt_datefield_value(until))
    return joins, where, params


def usage_by_day(
    *,
    project: int | None = None,
    agent: str = "",
    since: date | None = None,
    until: date | None = None,
) -> list[DayUsage]:
    """Each day with usage (UTC), by model, newest last; every message counted once."""
    joins, where, params = usage_where(project=project, agent=agent, since=since, until=until)
    days: dict[date | None, DayUsage] = {}
    for _, model, day, long, counts in grouped_usage(None, joins, where, params):
        entry = days.setdefault(day, DayUsage(day, {}, Totals()))
        entry.models.setdefault(model, Totals()).add(model, day, long, counts)
        entry.total.add(model, day, long, counts)
    return [days[d] for d in sorted(days, key=lambda d: d or date.min)]


def usage_by_project(
    *, agent: str = "", since: date | None = None, until: date | None = None
) -> dict[int, Totals]:
    """Each project's totals (subagents included), every message counted once."""
    _, where, params = usage_where(project=None, agent=agent, since=since, until=until)
    joins = f"JOIN {Session._meta.db_table} s ON s.id = u.session_id"
    out: dict[int, Totals] = defaultdict(Totals)
    for project, model, day, long, counts in grouped_usage("s.project_id", joins, where, params):
        out[project].add(model, day, long, counts)
    return dict(out)


def usage_by_model(
    *, project: int | None = None, days: list[DayUsage] | None = None
) -> dict[str, Totals]:
    """Totals per model, every message counted once (from `days` when given)."""
    out: dict[str, Totals] = {}
    for day in usage_by_day(project=project) if days is None else days:
        for model, totals in day.models.items():
            out.setdefault(model, Totals()).merge(totals)
    return dict(sorted(out.items(), key=lambda kv: -kv[1].tokens))
