"""Usage and cost on the pages: charts with their numbers, and the same numbers as CSV."""

from __future__ import annotations

import csv
import uuid
from collections.abc import Iterable, Iterator

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from .models import Project
from .rendering.charts import Bar, horizontal_bars
from .selectors.usage import Totals, turn_usage, usage_by_day, usage_by_model, usage_by_project
from .templatetags.numbers import usd
from .usage_charts import usage_context
from .views import session_or_404

COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "cache_write_1h_tokens",
    "messages",
    "cost_usd",
    "priced",
)


def _values(t: Totals) -> list:
    priced = "yes" if t.priced else "no: " + ", ".join(sorted(t.unpriced))
    counts = [t.input, t.output, t.cache_write, t.cache_read, t.cache_write_1h, t.messages]
    return [*counts, f"{t.cost:.6f}", priced]


@require_safe
def usage_overview(request: HttpRequest) -> HttpResponse:
    """Usage and cost across every project: per day, per project, per model."""
    context = usage_context()
    per_project = usage_by_project()
    projects = Project.objects.in_bulk(list(per_project))
    rows = sorted(
        ((projects[pk], t) for pk, t in per_project.items() if pk in projects),
        key=lambda pt: (-pt[1].cost, -pt[1].tokens),
    )
    bars = [Bar(p.path or p.folder, {"cost": float(t.cost)}) for p, t in rows[:30]]
    context["project_chart"] = horizontal_bars(
        bars, ["cost"], title="Cost per project (priced models)", fmt=lambda v: usd(v)
    )
    context["project_rows"] = rows
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
                [f"'{v}" if isinstance(v, str) and v[:1] in "=+-@\t\r" else v for v in row]
            )

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_safe
def usage_csv(request: HttpRequest) -> HttpResponseBase:
    """`/usage.csv?by=day|model|project[&project=N]`: every row of the usage tables."""
    by = request.GET.get("by", "day")
    project = None
    if request.GET.get("project"):
        if not request.GET["project"].isdigit():
            raise Http404("no such project")
        project = get_object_or_404(Project, pk=int(request.GET["project"]))
    pk = project.pk if project else None
    if by == "day":
        rows = (
            [str(d.day), model, *_values(t)]
            for d in usage_by_day(project=pk)
            for model, t in d.models.items()
        )
        return _csv("usage-by-day.csv", ["day", "model", *COLUMNS], rows)
    if by == "model":
        rows = ([m, *_values(t)] for m, t in usage_by_model(project=pk).items())
        return _csv("usage-by-model.csv", ["model", *COLUMNS], rows)
    if by == "project":
        per = usage_by_project()
        projects = Project.objects.in_bulk(list(per))
        rows = (
            [projects[p].path or projects[p].folder, *_values(t)]
            for p, t in per.items()
            if p in projects
        )
        return _csv("usage-by-project.csv", ["project", *COLUMNS], rows)
    raise Http404("by: day, model or project")


@require_safe
def session_usage_csv(request: HttpRequest, session_id: uuid.UUID) -> HttpResponseBase:
    """`/sessions/<id>/usage.csv`: the active branch's usage per turn."""
    session = session_or_404(session_id)
    rows = ([n, *_values(t)] for n, t in turn_usage(session))
    return _csv(f"usage-{session.session_id}.csv", ["turn", *COLUMNS], rows)
