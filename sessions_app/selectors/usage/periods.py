"""Usage per day, month or session, as `manage.py usage` prints it (like `ccusage`).

The same rows and prices as `/usage/` (`usage_by_day`): each message once (the rows a fork
copied from its parent left out), priced on its own day. A session's row is its file's
messages and its subagents' files', so the sessions add up to the days' total.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date

from ...models import Session
from . import Totals, grouped_usage, usage_by_day, usage_where

PERIODS = ("daily", "monthly", "session")


@dataclass
class PeriodUsage:
    """One row of the report: a day, a month or a session, its totals by model."""

    key: str  # "2026-11-20", "2026-11", or the session's ref
    models: dict[str, Totals] = field(default_factory=dict)
    total: Totals = field(default_factory=Totals)
    session: Session | None = None
    last_day: date | None = None  # a session's last day with usage

    def add(self, model: str, totals: Totals) -> None:
        self.models.setdefault(model, Totals()).merge(totals)
        self.total.merge(totals)


def usage_by_period(
    period: str,
    *,
    project: int | None = None,
    agent: str = "",
    since: date | None = None,
    until: date | None = None,
) -> list[PeriodUsage]:
    """The report's rows for `period` ("daily", "monthly" or "session"), oldest first."""
    if period == "session":
        return usage_by_session(project=project, agent=agent, since=since, until=until)
    days = usage_by_day(project=project, agent=agent, since=since, until=until)
    out: dict[str, PeriodUsage] = {}
    for day in days:
        label = "(no date)" if day.day is None else str(day.day)
        key = label[:7] if period == "monthly" and day.day is not None else label
        row = out.setdefault(key, PeriodUsage(key))
        for model, totals in day.models.items():
            row.add(model, totals)
    return list(out.values())


def usage_by_session(
    *,
    project: int | None = None,
    agent: str = "",
    since: date | None = None,
    until: date | None = None,
) -> list[PeriodUsage]:
    """Each session with usage (its subagents' files in it), by its last day, oldest first."""
    joins, where, params = usage_where(project=project, agent=agent, since=since, until=until)
    if not joins:
        joins = f"JOIN {Session._meta.db_table} s ON s.id = u.session_id"
    rows = grouped_usage("s.id", joins, where, params)
    sessions = Session.objects.select_related("project").in_bulk({pk for pk, *_ in rows})
    owners = _owners(sessions.values())
    out: dict[int, PeriodUsage] = {}
    for pk, model, day, long, counts in rows:
        session = owners.get(pk) or sessions[pk]
        row = out.setdefault(session.pk, PeriodUsage(session.ref, session=session))
        totals = Totals()
        totals.add(model, day, long, counts)
        row.add(model, totals)
        if day is not None and (row.last_day is None or day > row.last_day):
            row.last_day = day
    return sorted(out.values(), key=lambda r: (r.last_day or date.min, r.key))


def _owners(sessions: Iterable[Session]) -> dict[int, Session]:
    """The main session each subagent file belongs to (where it is known)."""
    subs = [s for s in sessions if s.is_subagent and s.owner_session_id]
    if not subs:
        return {}
    found = Session.objects.select_related("project").filter(
        is_subagent=False, session_id__in={s.owner_session_id for s in subs}
    )
    by_id: dict[tuple[str, object], Session] = {(s.namespace, s.session_id): s for s in found}
    return {
        s.pk: by_id[s.namespace, s.owner_session_id]
        for s in subs
        if (s.namespace, s.owner_session_id) in by_id
    }
