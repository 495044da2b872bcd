"""Usage and cost on the pages: charts with their numbers, and the same numbers as CSV."""

from __future__ import annotations

import csv
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_safe

from ...formats import REGISTRY
from ...models import Project
from ...rendering.charts import Bar, horizontal_bars
from ...rendering.numbers import usd
from ...selectors.usage import Totals, usage_by_day, usage_by_model, usage_by_project
from ...selectors.usage.activity import ActivityDay, activity_by_day
from ...selectors.usage.sessions import session_usage, session_usage_parts
from ...selectors.usage.tools import tool_stats
from ...services.archive import archive_enabled, archive_size
from ...templatetags.project_labels import label_twins, project_label
from ..heavy import heavy
from ..sessions import bounded_int, session_or_404
from .charts import turn_chart, usage_context

COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "cache_write_1h_tokens",
    "messages",
    "cost_usd",
    "priced",
    # Of output_tokens (billed as output, priced with it); last, so older columns keep
    # their places in a spreadsheet.
    "reasoning_tokens",
)


BY = ("day", "model", "project", "activity")
PROJECT_NUMBER = re.compile(r"[0-9]{1,19}")  # ASCII digits: `isdigit()` takes "²"
MAX_ID = 2**63 - 1


class BadFilter(ValueError):
    """A filter that cannot be read; its message names it and says why."""

    status = 400


class NoProject(BadFilter):
    status = 404


@dataclass(frozen=True)
class UsageFilter:
    """What the usage page or CSV is asked to cover."""

    project: Project | None = None
    agent: str = ""
    since: date | None = None
    until: date | None = None


def usage_filter(params: QueryDict) -> UsageFilter:
    """The filters of a request; `BadFilter` names the first that cannot be read."""
    project = None
    if value := params.get("project", ""):
        if not PROJECT_NUMBER.fullmatch(value) or int(value) > MAX_ID:
            raise BadFilter(f"project: {value!r} is not a project number")
        project = Project.objects.filter(pk=int(value)).first()
        if project is None:
            raise NoProject(f"project: there is no project {value}")
    agent = params.get("agent", "")
    if agent and agent not in REGISTRY:
        raise BadFilter(f"agent: {agent!r} is not one of {', '.join(sorted(REGISTRY))}")
    days: dict[str, date | None] = {}
    for name in ("since", "until"):
        value = params.get(name, "")
        try:
            days[name] = date.fromisoformat(value) if value else None
        except ValueError:
            raise BadFilter(f"{name}: {value!r} is not a date (YYYY-MM-DD)") from None
    return UsageFilter(project, agent, days["since"], days["until"])


def _refused(request: HttpRequest, error: BadFilter) -> HttpResponse:
    """The usage page's own refusal: what was wrong, and the way back."""
    return render(
        request, "sessions_app/usage_refused.html", {"error": str(error)}, status=error.status
    )


def _label(project: Project, twin: bool) -> str:
    """A project's label, with its agent and folder name where another has the same label."""
    label = project_label(project)
    return f"{label} ({project.agent}, {project.name})" if twin else label


def _values(t: Totals) -> list:
    priced = "yes" if t.priced else "no: " + ", ".join(sorted(t.unpriced))
    counts = [t.input, t.output, t.cache_write, t.cache_read, t.cache_write_1h, t.messages]
    return [*counts, f"{t.cost:.6f}", priced, t.reasoning]


@require_safe
def usage_overview(request: HttpRequest) -> HttpResponse:
    """Usage and cost across every project (or those asked for): per day, project, model."""
    try:
        chosen = usage_filter(request.GET)
    except BadFilter as exc:
        return _refused(request, exc)
    context = usage_context(
        chosen.project, agent=chosen.agent, since=chosen.since, until=chosen.until
    )
    per_project = usage_by_project(agent=chosen.agent, since=chosen.since, until=chosen.until)
    if chosen.project is not None:
        per_project = {k: v for k, v in per_project.items() if k == chosen.project.pk}
    projects = Project.objects.in_bulk(list(per_project))
    rows = sorted(
        ((projects[pk], t) for pk, t in per_project.items() if pk in projects),
        key=lambda pt: (-pt[1].cost, -pt[1].tokens),
    )
    twins = label_twins(p for p, _ in rows)
    bars = [Bar(_label(p, p.pk in twins), {"cost": float(t.cost)}) for p, t in rows[:30]]
    context["project_chart"] = horizontal_bars(
        bars, ["cost"], title="Cost per project (priced models)", fmt=lambda v: usd(v)
    )
    context["project_rows"] = rows
    context["twins"] = twins
    context["chosen"] = chosen
    context["archive"], context["archive_on"] = archive_size(), archive_enabled()
    return render(request, "sessions_app/usage.html", context)


def _csv(name: str, header: list[str], rows: Iterable[list]) -> StreamingHttpResponse:
    class Echo:
        def write(self, value: str) -> str:
            return value

    writer = csv.writer(Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(header)
        for row in rows:
            # A cell a spreadsheet would run as a formula is quoted as text.
            yield writer.writerow(
                [
                    f"'{v}" if isinstance(v, str) and v[:1] and v[:1] in "=+-@\t\r" else v
                    for v in row
                ]
            )

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_safe
def usage_csv(request: HttpRequest) -> HttpResponseBase:
    """`/usage.csv?by=day|model|project|activity[&project=N&agent=A&since=D&until=D]`: the
    usage tables (`activity`: turns and cost per day and project)."""
    by = request.GET.get("by", "day")
    try:
        if by not in BY:
            raise BadFilter(f"by: {by!r} is not one of {', '.join(BY)}")
        chosen = usage_filter(request.GET)
    except BadFilter as exc:
        return _refused(request, exc)
    pk = chosen.project.pk if chosen.project else None
    window: dict[str, Any] = {"agent": chosen.agent, "since": chosen.since, "until": chosen.until}
    if by == "day":
        rows = (
            [str(d.day), model, *_values(t)]
            for d in usage_by_day(project=pk, **window)
            for model, t in d.models.items()
        )
        return _csv("usage-by-day.csv", ["day", "model", *COLUMNS], rows)
    if by == "model":
        days = usage_by_day(project=pk, **window)
        rows = ([m, *_values(t)] for m, t in usage_by_model(days=days).items())
        return _csv("usage-by-model.csv", ["model", *COLUMNS], rows)
    if by == "activity":
        return _activity_csv(activity_by_day(project=pk, **window))
    per = usage_by_project(**window)
    if pk is not None:
        per = {k: v for k, v in per.items() if k == pk}
    projects = Project.objects.in_bulk(list(per))
    # The agent and the CLI's folder tell apart two projects of one working folder.
    rows = (
        [project_label(projects[p]), projects[p].agent, projects[p].folder, *_values(t)]
        for p, t in per.items()
        if p in projects
    )
    return _csv("usage-by-project.csv", ["project", "agent", "folder", *COLUMNS], rows)


def _activity_csv(found: list[ActivityDay]) -> StreamingHttpResponse:
    projects = Project.objects.in_bulk({a.project_id for a in found})
    rows = (
        [
            "" if a.day is None else str(a.day),
            project_label(projects[a.project_id]),
            projects[a.project_id].agent,
            projects[a.project_id].folder,
            a.turns,
            *_values(a.totals),
        ]
        for a in found
        if a.project_id in projects
    )
    header = ["day", "project", "agent", "folder", "turns", *COLUMNS]
    return _csv("usage-activity.csv", header, rows)


@require_safe
@heavy
def usage_tools_csv(request: HttpRequest) -> HttpResponseBase:
    """`/usage/tools.csv?project=N[&since=D&until=D]`: the tools the project's sessions
    called, most first, with how many of their answered calls failed (read from its files,
    so one project at a time, and a heavy request)."""
    try:
        chosen = usage_filter(request.GET)
        if chosen.project is None:
            raise BadFilter("project: name one (its number); the tools are read from its files")
    except BadFilter as exc:
        return _refused(request, exc)
    project = chosen.project
    label = project_label(project)
    rows = (
        [label, project.agent, t.name, t.calls, t.answered, t.failed, f"{t.failure_rate:.4f}"]
        for t in tool_stats(project, since=chosen.since, until=chosen.until)
    )
    header = ["project", "agent", "tool", "calls", "answered", "failed", "failure_rate"]
    return _csv(f"tools-{project.pk}.csv", header, rows)


@require_safe
@heavy
def session_usage_csv(request: HttpRequest, session_id: uuid.UUID) -> HttpResponseBase:
    """`/sessions/<id>/usage.csv`: the whole session's usage, each row saying where it belongs.

    Each turn of the active branch, then abandoned branches, inline sidechains and each
    subagent: together the session's usage as its page shows it, each message once.
    """
    session = session_or_404(session_id)
    rows = (
        [p.part, "" if p.turn is None else p.turn, *_values(p.totals)]
        for p in session_usage_parts(session)
    )
    return _csv(f"usage-{session.session_id}.csv", ["part", "turn", *COLUMNS], rows)


@require_safe
@heavy
def session_usage_turns(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """`/sessions/<id>/usage-turns/[?from=N]`: the transcript's "Usage per turn" panel, its
    chart and a row per turn, TURNS_PAGE turns from turn N with links to the pages before
    and after, fetched when the panel is opened (not on every page of the session)."""
    session = session_or_404(session_id)
    first = bounded_int(request.GET.get("from"), 1, low=1, high=max(1, session.turn_count))
    _total, models = session_usage(session)
    chart = turn_chart(session, first)
    context = {"session": session, "usage_turns": chart, "usage_models": models}
    return render(request, "sessions_app/transcript.html#usage-turns", context)
