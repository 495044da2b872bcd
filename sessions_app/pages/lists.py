"""The lists: projects (the home page, with the newest sessions), a project's sessions,
and the recent sessions of every project; each polls for changes and remembers its
filter and sort.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_safe

from .. import selectors
from ..formats import AGENT_LABELS
from ..models import Project
from ..permissions import can_manage_worktrees, can_write
from ..selectors.checkpoints import project_checkpoints
from ..selectors.importing import import_progress
from ..selectors.lists import hub_namespaces, namespaces_of
from ..selectors.lists.paging import SessionPage, cursor_text, offset_page, parse_cursor, seek_page
from ..selectors.worktrees import (
    git_elsewhere,
    grouped_with_worktrees,
    project_worktrees,
    worktree_badge,
)
from ..services.branching import branching_refusal
from .search import BadSearch, hub_choices, hub_filters
from .sessions import HtmxHttpRequest
from .usage.charts import usage_context

RECENT_ON_HOME = 8  # sessions on the home page; the rest on /recent/
LIVE_SECONDS = 60  # a session written to this recently is live
LIST_POLL = "every 3s"  # how often an open list asks whether anything changed
OLD_PAGES = 10  # an old `?page=N` link beyond this shows the first page: no deep OFFSET
PAGER = ("page", "after", "before", "stamp")  # what a pager link replaces in the query
SESSION_LIST_DEFAULTS = {"q": "", "sort": "updated", "empty": "", "undone": "", "removed": ""}
# On a hub, the lists of every project narrow to one owner, one machine, or both.
HUB_DEFAULTS = {"owner": "", "machine": ""}
PROJECT_LIST_DEFAULTS = {"q": "", **HUB_DEFAULTS}
RECENT_DEFAULTS = {"q": "", "sort": "updated", "agent": "", **HUB_DEFAULTS}


def remembered(
    request: HttpRequest, key: str, defaults: dict[str, str]
) -> HttpResponseRedirect | None:
    """Keep the filter and sort a list was asked for; a bare visit goes back to them.

    Kept in the visitor's session, per list: a request naming any of them (the filter
    box and sort menu always send all) replaces what was kept; one naming none (a link
    to the list) is sent to the kept ones. A poll ("stamp") changes nothing.
    """
    if "stamp" in request.GET:
        return None
    lists = request.session.get("lists", {})
    if any(name in request.GET for name in defaults):
        asked = {
            name: value
            for name in defaults
            if (value := request.GET.get(name, defaults[name])[:200]) != defaults[name]
        }
        if lists.get(key, {}) != asked:
            request.session["lists"] = {**lists, key: asked}
        return None
    kept = lists.get(key)
    if not kept or any(name in request.GET for name in ("page", "after", "before")):
        return None
    return HttpResponseRedirect(f"{request.path}?{urlencode(kept)}")


def _live_since() -> datetime:
    return timezone.now() - timedelta(seconds=LIVE_SECONDS)


def _search(request: HttpRequest) -> str:
    # PostgreSQL refuses NUL in a query parameter; nobody searches for one.
    return request.GET.get("q", "").replace("\x00", "").strip()[:200]


def _unchanged(request: HtmxHttpRequest, project: Project | None) -> tuple[bool, str]:
    """Whether a polling list is still right (one small query), and its new stamp.

    The stamp is the newest import the list has seen and when its first "live" badge
    runs out; the list is drawn again once either moved.
    """
    newest = selectors.newest_import(project)
    seen = request.GET.get("stamp", "")
    stamp = f"{newest.timestamp() if newest else 0:.6f}"
    try:
        seen_import, live_until = seen.split(":")
        return seen_import == stamp and time.time() < float(live_until), stamp
    except ValueError:
        return False, stamp


def _poll_url(request: HtmxHttpRequest, stamp: str, shown: Iterable[datetime | None]) -> str:
    """This list's URL with its query, and the stamp it will show on its next poll."""
    live_since = _live_since()
    expiries = [t.timestamp() + LIVE_SECONDS for t in shown if t and t >= live_since]
    query = request.GET.copy()
    query["stamp"] = f"{stamp}:{min(expiries) if expiries else 1e12:.0f}"
    return f"{request.path}?{query.urlencode()}"


def _page_of(request: HttpRequest, sessions: QuerySet, sort: str) -> SessionPage:
    """The page a list's link asks for: by its cursor, an old page number, or the first."""
    if cursor := parse_cursor(request.GET.get("after", ""), sort):
        return seek_page(sessions, sort=sort, after=cursor)
    if cursor := parse_cursor(request.GET.get("before", ""), sort):
        return seek_page(sessions, sort=sort, before=cursor)
    number = request.GET.get("page", "")
    # ASCII digits only: `"²".isdigit()` is true and `int("²")` fails.
    if number.isascii() and number.isdigit() and 1 < int(number) <= OLD_PAGES:
        return offset_page(sessions, sort=sort, number=int(number))
    return seek_page(sessions, sort=sort)


def _pager_urls(request: HttpRequest, page: SessionPage) -> tuple[str, str]:
    """The links to the pages before and after `page` ("" if none), keeping the filter."""
    query = request.GET.copy()
    for name in PAGER:
        query.pop(name, None)
    urls = []
    for name, there, row in (
        ("before", page.has_previous, 0),
        ("after", page.has_next, -1),
    ):
        if not (there and page.object_list):
            urls.append("")
            continue
        query[name] = cursor_text(page.object_list[row])
        urls.append(f"{request.path}?{query.urlencode()}")
        del query[name]
    return urls[0], urls[1]


def _hub_filter(request: HtmxHttpRequest) -> dict:
    """What a list of every project shows of the hub's filters: the owner and machine asked
    for, the namespaces they name (None: not narrowed), the choices, and the way back."""
    owner, machine = hub_filters(request.GET)
    query = request.GET.copy()
    for name in (*PAGER, *HUB_DEFAULTS):
        query.pop(name, None)
    query["owner"] = ""  # names the filter, so the kept one is replaced, not brought back
    return {
        "owner": owner,
        "machine": machine,
        "namespaces": namespaces_of(owner=owner, machine=machine) if owner or machine else None,
        "every_machine_url": f"{request.path}?{query.urlencode()}",
        **({} if request.htmx else hub_choices(hub_namespaces())),
    }


def _bad_filter(request: HtmxHttpRequest, template: str, error: BadSearch) -> HttpResponse:
    """A list asked for with a filter value it cannot read: its page, the filter named, a 400."""
    context = {"filter_error": str(error), "page": [], "projects": [], "recent": []}
    context["every_machine_url"] = f"{request.path}?owner="
    return render(request, template, context, status=400)


@require_safe
def project_list(request: HtmxHttpRequest) -> HttpResponse:
    """Every project, most recently active first, with a filter box; live ones marked."""
    unchanged, stamp = _unchanged(request, None)
    if request.htmx and "stamp" in request.GET and unchanged:
        return HttpResponse(status=204)
    template = "sessions_app/project_list.html"
    try:
        hub = _hub_filter(request)
    except BadSearch as exc:
        return _bad_filter(request, template, exc)
    if back := remembered(request, "projects", PROJECT_LIST_DEFAULTS):
        return back
    query, namespaces = _search(request), hub["namespaces"]
    projects = grouped_with_worktrees(
        selectors.projects_for_dashboard(query=query, namespaces=namespaces)
    )
    usage = {}
    if request.htmx:
        template += "#project-list"
    else:
        usage = usage_context()
    context = {
        **usage,
        **hub,
        "recent": selectors.recent_sessions(namespaces=namespaces)[:RECENT_ON_HOME],
        "projects": projects,
        # Nothing listed yet: whether an import is under way, or has never run, says why.
        "import_progress": import_progress() if not projects and not query else None,
        "query": query,
        "live_since": _live_since(),
        "poll_url": _poll_url(request, stamp, (p.last_activity for p in projects)),
        "poll_every": LIST_POLL,
    }
    return render(request, template, context)


@require_safe
def project_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The sessions of one project: sorted, filtered, paginated; live ones marked."""
    project = get_object_or_404(Project, pk=pk)
    unchanged, stamp = _unchanged(request, project)
    if request.htmx and "stamp" in request.GET and unchanged:
        return HttpResponse(status=204)
    if back := remembered(request, f"project-{project.pk}", SESSION_LIST_DEFAULTS):
        return back
    query = _search(request)
    sort = request.GET.get("sort", "updated")
    empty = request.GET.get("empty") == "1"
    undone = request.GET.get("undone") == "1"
    sessions = selectors.sessions_of_project(
        project=project, query=query, sort=sort, empty=empty, undone=undone
    )
    removed = request.GET.get("removed") == "1"
    if removed:  # only the sessions whose file is gone (kept by the archive)
        sessions = sessions.filter(file_removed_at__isnull=False)
    page = _page_of(request, sessions, sort)
    page.object_list = selectors.with_children_counts(page.object_list)
    for s in page.object_list:
        s.worktree = worktree_badge(s)
    template = "sessions_app/project_detail.html"
    if request.htmx:
        template += "#session-list"
    context = {
        "project": project,
        "page": page,
        "pager": _pager_urls(request, page),
        "empty": empty,
        "undone": undone,
        "removed": removed,
        # Whether any, not how many: a page of the list counts no sessions.
        "removed_any": not removed
        and project.sessions.filter(is_subagent=False, file_removed_at__isnull=False).exists(),
        "undone_count": 0 if undone else selectors.undone_backups(project),
        "empty_count": project.sessions.filter(is_subagent=False, turn_count=0).count(),
        "query": query,
        "sort": sort,
        # A project is one agent's: its rows offer no Branch when that agent is not branched here.
        "can_write": can_write(request.user) and not branching_refusal(project.agent),
        "can_worktree": can_manage_worktrees(request.user),
        "worktrees": [] if request.htmx else project_worktrees(project),
        # Pushed from another machine: its folder's git is there, never looked at here.
        "git_elsewhere": git_elsewhere(project),
        "checkpoints": ([], 0) if request.htmx else project_checkpoints(project),
        **({} if request.htmx else usage_context(project)),
        "live_since": _live_since(),
        "poll_url": _poll_url(request, stamp, (s.updated_at for s in page.object_list)),
        "poll_every": LIST_POLL,
    }
    return render(request, template, context)


@require_safe
def recent_sessions(request: HtmxHttpRequest) -> HttpResponse:
    """The newest sessions of every project, live ones marked; filtered and sorted."""
    unchanged, stamp = _unchanged(request, None)
    if request.htmx and "stamp" in request.GET and unchanged:
        return HttpResponse(status=204)
    template = "sessions_app/recent.html"
    try:
        hub = _hub_filter(request)
    except BadSearch as exc:
        return _bad_filter(request, template, exc)
    if back := remembered(request, "recent", RECENT_DEFAULTS):
        return back
    query, sort = _search(request), request.GET.get("sort", "updated")
    agent = request.GET.get("agent", "")
    agent = agent if agent in dict(AGENT_LABELS) else ""
    sessions = selectors.recent_sessions(
        query=query, agent=agent, sort=sort, namespaces=hub["namespaces"]
    )
    page = _page_of(request, sessions, sort)
    if request.htmx:
        template += "#recent-list"
    context = {
        **hub,
        "page": page,
        "pager": _pager_urls(request, page),
        "query": query,
        "sort": sort,
        "picked_agent": agent,
        "agents": AGENT_LABELS,
        "live_since": _live_since(),
        "poll_url": _poll_url(request, stamp, (s.updated_at for s in page.object_list)),
        "poll_every": LIST_POLL,
    }
    return render(request, template, context)
