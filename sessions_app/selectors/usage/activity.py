"""Your work per day across agents and projects: the turns you started and what they cost.

Cost and tokens are `/usage/`'s (`grouped_usage`, each message once, priced on its day).
A turn is a prompt the index marks as starting one (`Record.starts_turn`) in a main
session file (not a subagent's, not an inline sidechain), on the day its prompt was sent.
A fork holds copies of its parent's prompts: a turn whose API messages are copies
(`Usage.copy`) was counted in the session it came from, so it counts there only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.db import connection

from ...models import Record, Session, Usage
from . import Totals, grouped_usage, usage_where


@dataclass
class ActivityDay:
    """One project's activity on one day (UTC)."""

    day: date | None
    project_id: int
    turns: int = 0
    totals: Totals = field(default_factory=Totals)


def _as_day(value: object) -> date | None:
    if isinstance(value, str):
        return date.fromisoformat(value)
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else None


def _record_day() -> str:
    if connection.vendor == "postgresql":
        return "(r.timestamp AT TIME ZONE 'UTC')::date"
    return "date(r.timestamp)"


def turns_by_day(
    *,
    project: int | None = None,
    agent: str = "",
    since: date | None = None,
    until: date | None = None,
) -> dict[tuple[date | None, int], int]:
    """Turns started per (day, project), each once across a fork and its parent."""
    record, session, usage = Record._meta.db_table, Session._meta.db_table, Usage._meta.db_table
    day = _record_day()
    where = "r.starts_turn AND NOT r.sidechain AND NOT s.is_subagent AND c.sid IS NULL"
    params: list[Any] = []
    if project is not None:
        where += " AND s.project_id = %s"
        params.append(project)
    if agent:
        where += " AND s.agent = %s"
        params.append(agent)
    if since is not None:
        where += f" AND {day} >= %s"
        params.append(connection.ops.adapt_datefield_value(since))
    if until is not None:
        where += f" AND {day} <= %s"
        params.append(connection.ops.adapt_datefield_value(until))
    # The turns of each session whose messages are copies: few (a fork's copied prefix),
    # found once, then left out of the count by an anti-join.
    copied = (
        f"SELECT DISTINCT cu.session_id AS sid, cr.turn AS turn FROM {usage} cu "  # noqa: S608
        f"JOIN {record} cr ON cr.session_id = cu.session_id AND cr.line = cu.line "
        'WHERE cu."copy" AND cr.turn IS NOT NULL'
    )
    sql = (
        f"SELECT {day}, s.project_id, COUNT(*) FROM {record} r "  # noqa: S608
        f"JOIN {session} s ON s.id = r.session_id "
        f"LEFT JOIN ({copied}) c ON c.sid = r.session_id AND c.turn = r.turn "
        f"WHERE {where} GROUP BY {day}, s.project_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return {(_as_day(d), int(p)): int(n) for d, p, n in rows}


def activity_by_day(
    *,
    project: int | None = None,
    agent: str = "",
    since: date | None = None,
    until: date | None = None,
) -> list[ActivityDay]:
    """Each (day, project) with turns or usage: its turns, tokens and cost; by day, then
    by cost (the days without a date first)."""
    found: dict[tuple[date | None, int], ActivityDay] = {}
    joins, where, params = usage_where(project=project, agent=agent, since=since, until=until)
    if not joins:
        joins = f"JOIN {Session._meta.db_table} s ON s.id = u.session_id"
    for pk, model, day, long, counts in grouped_usage("s.project_id", joins, where, params):
        entry = found.setdefault((day, int(pk)), ActivityDay(day, int(pk)))
        entry.totals.add(model, day, long, counts)
    turns = turns_by_day(project=project, agent=agent, since=since, until=until)
    for (day, pk), count in turns.items():
        found.setdefault((day, pk), ActivityDay(day, pk)).turns = count
    return sorted(
        found.values(), key=lambda a: (a.day or date.min, -a.totals.cost, -a.turns, a.project_id)
    )


@dataclass
class DayTotal:
    """Every project's activity on one day."""

    day: date
    turns: int = 0
    totals: Totals = field(default_factory=Totals)


def activity_totals(rows: list[ActivityDay]) -> list[DayTotal]:
    """The rows summed per day (those without a date left out), oldest first."""
    days: dict[date, DayTotal] = {}
    for row in rows:
        if row.day is None:
            continue
        entry = days.setdefault(row.day, DayTotal(row.day))
        entry.turns += row.turns
        entry.totals.merge(row.totals)
    return [days[d] for d in sorted(days)]
