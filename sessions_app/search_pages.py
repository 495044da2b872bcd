"""The search page (`/search/?q=…`), and the reading of a search's filters for it and the API."""

from __future__ import annotations

import re
from datetime import date
from urllib.parse import urlencode

from django.db import connection
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from . import selectors
from .formats import REGISTRY
from .models import Project, Record, Session
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


def link_hits(results: SearchResults, q: str) -> None:
    """Set every group's and hit's `url`, in a bounded number of queries however many hits."""
    bases = {}
    for group in results.groups:
        group.url = bases[group.session.pk] = session_url(group.session)
    pairs = [(group.session, hit) for group in results.groups for hit in group.hits]
    for (_, hit), url in zip(pairs, hit_urls(pairs, q, bases), strict=True):
        hit.url = url


def hit_urls(
    pairs: list[tuple[Session, Hit]], q: str, bases: dict[int, str] | None = None
) -> list[str]:
    """Where each (session, hit) is shown: its turn in the transcript (or its branch), the
    match marked; two queries for all of them (one per hit cost most of a search's time)."""
    # An inline subagent sits in the turn of the call that started it.
    asked = [
        (session.pk, hit.line)
        for session, hit in pairs
        if not session.is_subagent and hit.turn is None and hit.sidechain
    ]
    before = _turns_before(asked)
    turns = [
        hit.turn if hit.turn is not None else before.get((session.pk, hit.line))
        for session, hit in pairs
    ]
    places = [
        (session.pk, turn, hit.line)
        for (session, hit), turn in zip(pairs, turns, strict=True)
        if turn and hit.active and not session.is_subagent
    ]
    deep = _deep_in_turns(places)
    # One `reverse` per session (`bases`: those known) and one encoding of the words:
    # per hit, they cost more than the queries.
    bases = dict(bases or {})
    for session, _ in pairs:
        if session.pk not in bases:
            bases[session.pk] = session_url(session)
    hl = urlencode({"hl": q})
    # A session with no page (`session_url` gives "") gives its hits no link either.
    return [
        bases[session.pk]
        + _hit_params(session, hit, turn, (session.pk, turn, hit.line) in deep, hl)
        if bases[session.pk]
        else ""
        for (session, hit), turn in zip(pairs, turns, strict=True)
    ]


def _hit_params(session: Session, hit: Hit, turn: int | None, deep: bool, hl: str) -> str:
    """The query (and anchor) of a hit's link within its session's page."""
    if session.is_subagent:
        return f"?{hl}"
    params: list[str] = []
    anchor = ""
    if hit.active and hit.turn is None and not hit.sidechain:
        # Injected context and output before the first prompt: shown among all records
        # only, and only by a page of the first turns: the one that starts at the hit.
        params += ["all=1", "after=0", f"from={hit.line}", "skip=0"]
    elif turn and hit.active and deep:
        # The turn's first page would end before the hit: open the page that starts at it.
        params += [f"after={turn - 1}", f"from={hit.line}", "skip=0"]
    elif turn:
        params.append(f"after={turn - 1}")
        anchor = f"#turn-{turn}"
    elif not hit.active:
        leaf = _abandoned_leaf(session, hit.line)
        if leaf:
            params.append(urlencode({"leaf": leaf}))
        # Its turn-less records are shown among all records only.
        params.append("all=1")
    params.append(hl)
    return f"?{'&'.join(params)}{anchor}"


def _turns_before(asked: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """(session pk, line) -> the turn of the nearest numbered record before the line on the
    active branch, for every pair that has one: one query."""
    if not asked:
        return {}
    table = Record._meta.db_table
    each = (
        f"SELECT (SELECT turn FROM {table} WHERE session_id = %s AND line < %s "  # noqa: S608
        "AND active AND turn IS NOT NULL ORDER BY line DESC LIMIT 1)"
    )
    found: dict[tuple[int, int], int] = {}
    for part in _parts(asked):
        sql = " UNION ALL ".join(f"SELECT {i} AS i, ({each}) AS t" for i in range(len(part)))
        with connection.cursor() as cursor:
            cursor.execute(sql, [value for pair in part for value in pair])
            for i, turn in cursor.fetchall():
                if turn is not None:
                    found[part[i]] = turn
    return found


def _deep_in_turns(places: list[tuple[int, int, int]]) -> set[tuple[int, int, int]]:
    """The (session pk, turn, line) places so far into their turn that its first page may
    not reach them: one query for all."""
    if not places:
        return set()
    table = Record._meta.db_table
    limits = PAGE_LIMITS
    each = (
        f"SELECT {{i}}, COUNT(*), SUM(length) FROM {table} "  # noqa: S608
        "WHERE session_id = %s AND turn = %s AND active AND line < %s"
    )
    deep: set[tuple[int, int, int]] = set()
    for part in _parts(places):
        sql = " UNION ALL ".join(each.format(i=i) for i in range(len(part)))
        with connection.cursor() as cursor:
            cursor.execute(sql, [value for place in part for value in place])
            for i, records, size in cursor.fetchall():
                # Half a page: what is shown weighs more than the lines it comes from, or less.
                if records >= limits.items // 2 or (size or 0) >= limits.page_bytes // 2:
                    deep.add(part[i])
    return deep


def _parts(items: list, size: int = 200) -> list[list]:
    """`items` in parts small enough for one statement (SQLite's compound-select limit)."""
    return [items[i : i + size] for i in range(0, len(items), size)]


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
        link_hits(results, query.text)
        owners = _owner_titles(results.groups)
        for group in results.groups:
            group.heading = _heading(group.session, owners)
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
