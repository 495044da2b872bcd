"""The search page (`/search/?q=…`), and the reading of a search's filters for it and the API."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date
from typing import Any

from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from ... import selectors
from ...formats import AGENT_LABELS, REGISTRY
from ...models import Project, Session
from ...selectors.lists import hub_namespaces
from ...selectors.search import MAX_PAGE, SearchQuery, SearchResults, SessionHits, search
from ...services.searching import words_waiting
from ...session_refs import NAMESPACE_PART, REF_RE
from ..heavy import heavy
from .links import link_hits as link_hits
from .links import session_url as session_url

PROJECT_NUMBER = re.compile(r"[0-9]{1,19}")
PAGE_NUMBER = re.compile(r"[1-9][0-9]{0,3}")
MAX_ID = 2**63 - 1
NAMESPACE_NAME = re.compile(NAMESPACE_PART)
HUB_FILTERS = {"owner": "a user name", "machine": "a machine name"}


class BadSearch(ValueError):
    """A filter that cannot be read; its message says which and why."""


def hub_filters(params: QueryDict) -> tuple[str, str]:
    """(owner, machine) a request narrows to on a hub, "" each when not asked; `BadSearch`
    for a value no namespace could have (a well-formed name nobody pushed as narrows to none).
    """
    found = []
    for name, what in HUB_FILTERS.items():
        value = params.get(name, "")
        if value and (not NAMESPACE_NAME.fullmatch(value) or ".." in value):
            raise BadSearch(f"{name}: {value!r} is not {what} (letters, digits, '.', '_', '-')")
        found.append(value)
    return found[0], found[1]


def hub_choices(namespaces: list[str]) -> dict[str, list[str]]:
    """The owners and the machines a hub's filters offer (both empty off a hub)."""
    pairs = [n.partition("@") for n in namespaces]
    return {
        "owners": sorted({owner for owner, _, _ in pairs}),
        "machines": sorted({machine for _, _, machine in pairs}),
    }


def search_query(params: QueryDict) -> SearchQuery:
    """The search a request asks for; `BadSearch` for a filter that is not understood."""
    query = SearchQuery(params.get("q", "").replace("\x00", "").strip()[:500])
    project = params.get("project", "")
    if project:
        # ASCII digits only (`isdigit()` takes "²"), and no more than a database id holds.
        if not PROJECT_NUMBER.fullmatch(project) or int(project) > MAX_ID:
            raise BadSearch(f"project: {project!r} is not a project number")
        query.project = int(project)
    agent = params.get("agent", "")
    if agent:
        if agent not in REGISTRY:
            raise BadSearch(f"agent: {agent!r} is not one of {', '.join(sorted(REGISTRY))}")
        query.agent = agent
    for name in ("since", "until"):
        value = params.get(name, "")
        if value:
            try:
                setattr(query, name, date.fromisoformat(value))
            except ValueError:
                raise BadSearch(f"{name}: {value!r} is not a date (YYYY-MM-DD)") from None
    page = params.get("page", "")
    if page:
        if not PAGE_NUMBER.fullmatch(page) or int(page) > MAX_PAGE:
            raise BadSearch(f"page: {page!r} is not a page number (1 to {MAX_PAGE})")
        query.page = int(page)
    query.everything = params.get("all", "") in ("1", "on", "true")
    query.owner, query.machine = hub_filters(params)
    session = params.get("session", "")
    if session:
        if not REF_RE.fullmatch(session):
            raise BadSearch(f"session: {session!r} is not a session id")
        found = selectors.listed_session(session)
        if found is None:
            raise BadSearch(f"session: no session {session}")
        query.session = found.pk
    return query


def project_choices() -> list[tuple[int, str]]:
    """(pk, label) of the projects the filter offers: those with a listed session, a path
    that two folders share told apart by agent and folder."""
    # Values, not model instances: the page asks for them on every search.
    projects = list(
        Project.objects.filter(Exists(Session.objects.listed().filter(project=OuterRef("pk"))))
        .order_by("path", "folder")
        .values_list("pk", "agent", "folder", "path")
    )
    labels = [path or _name(folder) for _, _, folder, path in projects]
    shared = {label for label, n in Counter(labels).items() if n > 1}
    return [
        (pk, f"{label} ({AGENT_LABELS.get(agent, agent)}, {_name(folder)})")
        if label in shared
        else (pk, label)
        for (pk, agent, folder, _), label in zip(projects, labels, strict=True)
    ]


def _name(folder: str) -> str:
    """A project's name (`Project.name`) from its folder."""
    return folder.rstrip("/").rsplit("/", 1)[-1]


def _owner_titles(groups: list[SessionHits]) -> dict[tuple[str, str], str]:
    """The titles of the sessions the subagents among `groups` belong to, by (namespace, id)."""
    wanted = {
        (g.session.namespace, str(g.session.owner_session_id))
        for g in groups
        if g.session.is_subagent and g.session.owner_session_id
    }
    if not wanted:
        return {}
    rows = Session.objects.filter(
        is_subagent=False, session_id__in={sid for _, sid in wanted}
    ).values_list("namespace", "session_id", "title")
    return {(ns, str(sid)): title for ns, sid, title in rows if (ns, str(sid)) in wanted}


def _heading(session: Session, owners: dict[tuple[str, str], str]) -> str:
    """A group's heading: its title; a subagent's (which has none of its own) names its owner."""
    if not session.is_subagent:
        return session.title or "(untitled)"
    owner = owners.get((session.namespace, str(session.owner_session_id)))
    name = f"Subagent {session.agent_name}" if session.agent_name else "Subagent"
    return f"{name} of “{owner}”" if owner else session.title or name


@require_safe
@heavy
def search_page(request: HttpRequest) -> HttpResponse:
    """Results of a search across every session, or only one (`session=`), with filters."""
    error = ""
    results: SearchResults | None = None
    try:
        query = search_query(request.GET)
    except BadSearch as exc:
        query, error = SearchQuery(request.GET.get("q", "")[:500]), str(exc)
    if not error and query.text:
        results = search(query)
        link_hits(results, query.text)
        owners = _owner_titles(results.groups)
        for group in results.groups:
            group.heading = _heading(group.session, owners)
    more_url = ""
    if results is not None and results.next_page:
        params = request.GET.copy()
        params["page"] = str(results.next_page)
        more_url = f"{reverse('sessions:search')}?{params.urlencode()}"
    context: dict[str, Any] = {"query": query, "results": results, "error": error}
    context["more_url"] = more_url
    if results is not None and getattr(request, "htmx", False) and query.page > 1:
        # "More results": the next sessions alone, in place of the link that asked.
        return render(request, "sessions_app/search.html#search-groups", context)
    scoped = None
    if query.session is not None:
        scoped = Session.objects.filter(pk=query.session).first()
    context |= {
        "scoped": scoped,
        # SQLite: texts just imported whose words the index has not taken in yet.
        "words_waiting": words_waiting() if results is not None else 0,
        "projects": project_choices(),
        "agents": sorted((a.name, a.label) for a in REGISTRY.values()),
        **hub_choices(hub_namespaces()),
    }
    return render(request, "sessions_app/search.html", context, status=400 if error else 200)
