"""GET /api/usage/activity: turns, tokens and cost per day and project, as `/usage.csv?by=
activity` gives them; GET /api/usage/tools: a project's tools and their failures, as
`/usage/tools.csv` (for scripts: the same filters, the same numbers)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from ..models import Project
from ..pages.heavy import heavy
from ..pages.usage import BadFilter, usage_filter
from ..selectors.usage import Totals
from ..selectors.usage.activity import activity_by_day
from ..selectors.usage.tools import tool_stats
from ..templatetags.project_labels import project_label
from .auth import ApiRequest, allow, authenticate, error


def totals_json(t: Totals) -> dict[str, Any]:
    """A `Totals` as the API gives it: tokens of each kind, messages and cost (a string, to
    the millionth of a dollar, so no float rounds it), and the models without a price."""
    return {
        "input_tokens": t.input,
        "output_tokens": t.output,
        "cache_write_tokens": t.cache_write,
        "cache_read_tokens": t.cache_read,
        "cache_write_1h_tokens": t.cache_write_1h,
        "reasoning_tokens": t.reasoning,
        "messages": t.messages,
        "cost_usd": f"{t.cost:.6f}",
        "unpriced_models": sorted(t.unpriced),
    }


@csrf_exempt
@login_not_required
@allow("GET")
def activity_view(request: ApiRequest) -> HttpResponse:
    """GET /api/usage/activity[?project=&agent=&since=&until=]."""
    refused = authenticate(request, write=False)
    if refused is not None:
        return refused
    try:
        chosen = usage_filter(request.GET)
    except BadFilter as exc:
        return error(exc.status, str(exc))
    found = activity_by_day(
        project=chosen.project.pk if chosen.project else None,
        agent=chosen.agent,
        since=chosen.since,
        until=chosen.until,
    )
    projects = Project.objects.in_bulk({a.project_id for a in found})
    total, turns, days = Totals(), 0, []
    for a in found:
        project = projects.get(a.project_id)
        if project is None:
            continue
        total.merge(a.totals)
        turns += a.turns
        days.append(
            {
                "day": None if a.day is None else str(a.day),
                "project_id": project.pk,
                "project": project_label(project),
                "agent": project.agent,
                "turns": a.turns,
                **totals_json(a.totals),
            }
        )
    return JsonResponse({"days": days, "totals": {"turns": turns, **totals_json(total)}})


@csrf_exempt
@login_not_required
@allow("GET")
@heavy
def tools_view(request: ApiRequest) -> HttpResponse:
    """GET /api/usage/tools?project=N[&since=&until=]: most called first."""
    refused = authenticate(request, write=False)
    if refused is not None:
        return refused
    try:
        chosen = usage_filter(request.GET)
        if chosen.project is None:
            raise BadFilter("project: name one (its number); the tools are read from its files")
    except BadFilter as exc:
        return error(exc.status, str(exc))
    project = chosen.project
    tools = [
        {
            "name": t.name,
            "calls": t.calls,
            "answered": t.answered,
            "failed": t.failed,
            "failure_rate": round(t.failure_rate, 4),
        }
        for t in tool_stats(project, since=chosen.since, until=chosen.until)
    ]
    listed = {"id": project.pk, "label": project_label(project), "agent": project.agent}
    return JsonResponse({"project": listed, "tools": tools})
