"""The search page (`/search/?q=…`), and the reading of a search's filters for it and the API."""

from __future__ import annotations

import re
from datetime import date
from urllib.parse import urlencode

from django.db.models import Count, Exists, OuterRef, Sum
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from . import selectors
from .formats import REGISTRY
from .models import Project, Session
from .selectors.family import AGENT_ID_RE, agent_id_of
from .selectors.lists import hub_namespaces
from .selectors.search import Hit, SearchQuery, SearchResults, SessionHits, search
from .services.searching import words_waiting
from .session_refs import NAMESPACE_PART, REF_RE, session_ref
from .transcript.limits import PAGE_LIMITS

PROJECT_NUMBER = re.compile(r"[0-9]{1,19}")
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


def session_url(session: Session) -> str:
    """Where a session's hits are shown: its transcript, or a subagent's own page (else
    its owner's); never the placeholder id an owner-less subagent file gets. "" for a row
    whose stored namespace makes no URL: listed unlinked, never a 500."""
    if not session.linkable:
        return ""
    if session.is_subagent:
        agent_id = agent_id_of(session)
        if session.owner_session_id and AGENT_ID_RE.match(agent_id):
            owner = session_ref(session.namespace, session.owner_session_id)
            return reverse("sessions:subagent", args=[owner, agent_id])
        if session.owner_session_id:
            owner = session_ref(session.namespace, session.owner_session_id)
            return reverse("sessions:session_detail", args=[owner])
    return reverse("sessions:session_detail", args=[session.ref])


def hit_url(session: Session, hit: Hit, q: str) -> str:
    """Where a hit is shown: its turn in the transcript (or its branch), the match marked."""
    base = session_url(session)
    if not base:
        return ""
    if session.is_subagent:
        return f"{base}?{urlencode({'hl': q})}"
    params: dict[str, str | int] = {}
    anchor = ""
    turn = hit.turn
    if hit.sidechain and turn is None:
        # An inline subagent sits in the turn of the call that started it.
        turn = _turn_before(session, hit.line)
    if turn and hit.active and _deep_in_turn(session, turn, hit.line):
        # The turn's first page would end before the hit: open the page that starts at it.
        params.update(after=turn - 1, **{"from": hit.line, "skip": 0})
    elif turn:
        params["after"] = turn - 1
        anchor = f"#turn-{turn}"
    elif not hit.active:
        leaf = _abandoned_leaf(session, hit.line)
        if leaf:
            params["leaf"] = leaf
    params["hl"] = q
    return f"{base}?{urlencode(params)}{anchor}"


def _deep_in_turn(session: Session, turn: int, line: int) -> bool:
    """Whether so much of the turn comes before `line` that its first page may not reach it."""
    before = session.records.filter(turn=turn, active=True, line__lt=line)
    found = before.aggregate(records=Count("pk"), size=Sum("length"))
    limits = PAGE_LIMITS
    # Half a page: what is shown weighs more than the lines it comes from, or less.
    return found["records"] >= limits.items // 2 or (found["size"] or 0) >= limits.page_bytes // 2


def _turn_before(session: Session, line: int) -> int | None:
    """The turn of the nearest numbered record before `line` on the active branch."""
    before = session.records.filter(line__lt=line, active=True, turn__isnull=False)
    return before.order_by("-line").values_list("turn", flat=True).first()


def _abandoned_leaf(session: Session, line: int) -> str:
    """The leaf of the abandoned branch a line most likely belongs to ("" if none)."""
    best = ""
    best_line = -1
    for branch in session.abandoned or []:
        first = branch.get("line", -1) if isinstance(branch, dict) else -1
        if isinstance(first, int) and best_line < first <= line and branch.get("leaf_uuid"):
            best, best_line = str(branch["leaf_uuid"]), first
    return best


def project_choices() -> list[tuple[int, str]]:
    """(pk, label) of the projects the filter offers: those with a listed session, a path
    that two folders share told apart by agent and folder."""
    projects = list(
        Project.objects.filter(Exists(Session.objects.listed().filter(project=OuterRef("pk"))))
        .order_by("path", "folder")
        .only("pk", "agent", "folder", "path")
    )
    labels = [p.path or p.name for p in projects]
    shared = {label for label in labels if labels.count(label) > 1}
    return [
        (p.pk, f"{label} ({p.get_agent_display()}, {p.name})" if label in shared else label)
        for p, label in zip(projects, labels, strict=True)
    ]


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
        owners = _owner_titles(results.groups)
        for group in results.groups:
            group.url = session_url(group.session)
            group.heading = _heading(group.session, owners)
            for hit in group.hits:
                hit.url = hit_url(group.session, hit, query.text)
    scoped = None
    if query.session is not None:
        scoped = Session.objects.filter(pk=query.session).first()
    context = {
        "query": query,
        "results": results,
        "error": error,
        "scoped": scoped,
        # SQLite: texts just imported whose words the index has not taken in yet.
        "words_waiting": words_waiting() if results is not None else 0,
        "projects": project_choices(),
        "agents": sorted((a.name, a.label) for a in REGISTRY.values()),
        **hub_choices(hub_namespaces()),
    }
    return render(request, "sessions_app/search.html", context, status=400 if error else 200)
