"""Pages. Thin: an access helper, a selector, then render."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable

from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe
from django_htmx.middleware import HtmxDetails

from . import exporting, selectors
from .lineage import lineage_svg
from .models import Project, Session
from .permissions import can_manage_worktrees, can_write
from .resume import resume_command
from .selectors.worktrees import (
    file_backups_kept,
    grouped_with_worktrees,
    project_worktrees,
    worktree_badge,
    worktree_possible,
)
from .services.roots import UnsafePath, open_regular
from .transcript import PAGE_LIMITS, Page, RawRecord, build_page, build_turns, full_item

AGENT_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Record ids are UUIDs in both CLIs; a damaged or hand-made file may hold others.
LEAF_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


class HtmxHttpRequest(HttpRequest):
    """A request after django-htmx's middleware: `request.htmx` is truthy when htmx sent it."""

    htmx: HtmxDetails


def session_or_404(session_id: uuid.UUID) -> Session:
    """The listed session with this id, for a page; 404 when there is none."""
    session = selectors.listed_session(session_id)
    if session is None:
        raise Http404("no such session")
    return session


def _int(value: str | None, default: int, *, low: int = 0, high: int = 10**9) -> int:
    try:
        return min(max(int(value or default), low), high)
    except ValueError:
        return default


def _search(request: HttpRequest) -> str:
    # PostgreSQL refuses NUL in a query parameter; nobody searches for one.
    return request.GET.get("q", "").replace("\x00", "").strip()[:200]


@require_safe
def project_list(request: HtmxHttpRequest) -> HttpResponse:
    """Every project, most recently active first, with a filter box."""
    query = _search(request)
    projects = grouped_with_worktrees(selectors.projects_for_dashboard(query=query))
    template = "sessions_app/project_list.html"
    if request.htmx:
        template += "#project-list"
    return render(request, template, {"projects": projects, "query": query})


@require_safe
def project_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The sessions of one project: sorted, filtered, paginated."""
    project = get_object_or_404(Project, pk=pk)
    query = _search(request)
    sort = request.GET.get("sort", "updated")
    sessions = selectors.sessions_of_project(project=project, query=query, sort=sort)
    page = Paginator(sessions, 50).get_page(request.GET.get("page"))
    page.object_list = selectors.with_children_counts(list(page.object_list))
    for s in page.object_list:
        s.worktree = worktree_badge(s)
    template = "sessions_app/project_detail.html"
    if request.htmx:
        template += "#session-list"
    context = {
        "project": project,
        "page": page,
        "query": query,
        "sort": sort,
        "can_write": can_write(request.user),
        "can_worktree": can_manage_worktrees(request.user),
        "worktrees": [] if request.htmx else project_worktrees(project),
    }
    return render(request, template, context)


@require_safe
def session_detail(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The transcript: the active branch (or an abandoned one), a page of turns at a time."""
    session = session_or_404(session_id)
    show_all = request.GET.get("all") == "1"
    leaf = request.GET.get("leaf", "")
    branch = None
    if leaf:
        branch, refusal = _abandoned_branch(request, session, leaf)
        if refusal is not None:
            return refusal
    total = branch.turns if branch else session.turn_count
    after = _int(request.GET.get("after"), 0, high=total)
    last = after + selectors.PAGE_TURNS
    # `from` and `skip`: the page starts inside turn after+1, at this record and item.
    start = (_int(request.GET.get("from"), 0), _int(request.GET.get("skip"), 0))
    records: Iterable[RawRecord]
    if branch:
        records = selectors.branch_records(
            session, branch, first_turn=after + 1, last_turn=last, show_all=show_all
        )
    else:
        records = selectors.page_records(
            session,
            first_turn=after + 1,
            last_turn=last,
            from_line=start[0],
            limit=PAGE_LIMITS.records + 1,
            show_all=show_all,
        )
    page = build_page(records, session.agent, show_all=show_all, limits=PAGE_LIMITS, start=start)
    turns = page.turns
    if not branch:
        by_turn: dict[int, list[dict]] = {}
        for abandoned in session.abandoned:
            by_turn.setdefault(abandoned["at_turn"], []).append(abandoned)
        for turn in turns:
            turn.abandoned = by_turn.get(turn.number, []) if turn.number is not None else []
            turn.leaving = session.turn_count - (turn.number or 0) + 1
    context = {
        "session": session,
        "turns": turns,
        "next_page": _next_page(page, last, total),
        "show_all": show_all,
        "leaf": leaf,
        "branch_turns": total,
        "resume_command": resume_command(session),
        "subagents": selectors.subagents_of(session),
        "can_write": can_write(request.user),
        "can_worktree": can_manage_worktrees(request.user) and worktree_possible(session),
    }
    if context["can_worktree"]:
        context["file_backups"] = file_backups_kept(session)
        context["agent_label"] = session.agent_profile.label
    template = "sessions_app/transcript.html"
    if request.htmx and (after or start[0]):
        template += "#turn-page"
    else:
        context["children"] = session.children.order_by("id")
        context["undo_available"] = selectors.undo_available(session)
        context["edit_prompt"] = selectors.edit_prompt(session)
    return render(request, template, context)


def _next_page(page: Page, last: int, total: int) -> tuple[str, str] | None:
    """The query and label of the page after this one: the rest of a turn, or the next turns."""
    if page.next_line is not None:
        turn = page.next_turn or 0
        query = f"after={max(turn - 1, 0)}&from={page.next_line}&skip={page.next_index}"
        shown = page.turns[-1].number if page.turns else None
        return query, f"More of turn {turn}" if turn and turn == shown else "More turns"
    return (f"after={last}", "More turns") if last < total else None


def _abandoned_branch(
    request: HttpRequest, session: Session, leaf: str
) -> tuple[selectors.Branch | None, HttpResponse | None]:
    """The branch `?leaf=` names, or the page that says why it names none (400, 404)."""
    if not LEAF_RE.fullmatch(leaf):
        error, status = "leaf must be a record id (a UUID: letters, digits, dashes)", 400
    elif (branch := selectors.abandoned_branch(session, leaf)) is None:
        error, status = f"no abandoned branch of this session ends at record {leaf}", 404
    else:
        return branch, None
    context = {"error": error, "session": session}
    return None, render(request, "sessions_app/action_error.html", context, status=status)


@require_safe
def record_output(
    request: HtmxHttpRequest, session_id: uuid.UUID, line: int, index: int | None = None
) -> HttpResponse:
    """One item of a record whole ("show all" of a cut one), or every item of the record."""
    session = session_or_404(session_id)
    record = selectors.record_at(session, line)
    if record is None:
        raise Http404("no such record")
    if index is None:
        turns = build_turns([record], session.agent, show_all=True)
        items = [item for turn in turns for item in turn.items]
    elif (item := full_item(record, session.agent, index, raw="raw" in request.GET)) is None:
        raise Http404("no such item")
    else:
        items = [item]
    template = "sessions_app/record_output.html"
    if request.htmx:
        template += "#record-output"
    context = {"session": session, "items": items, "line": line, "turn": record.turn}
    return render(request, template, context)


@require_safe
def subagent(request: HttpRequest, session_id: uuid.UUID, agent_id: str) -> HttpResponse:
    """A subagent's transcript, loaded into its call when opened."""
    session = session_or_404(session_id)
    if not AGENT_ID_RE.match(agent_id):
        raise Http404("no such subagent")
    sub = selectors.subagents_of(session).get(agent_id)
    if sub is None:
        raise Http404("no such subagent")
    records = selectors.subagent_records(sub)
    turns = build_turns(records, session.agent)
    context = {"turns": turns, "sub": sub, "session": session, "subagents": {}}
    return render(request, "sessions_app/transcript.html#turn-list", context)


@require_safe
def lineage(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The family tree of a session, drawn as SVG (bounded, whatever the files say)."""
    session = session_or_404(session_id)
    root, sessions = selectors.lineage_of(session)
    svg = lineage_svg(root, sessions, current=session)
    return render(request, "sessions_app/lineage.html", {"session": session, "svg": svg})


@require_safe
def export(request: HttpRequest, session_id: uuid.UUID, fmt: str) -> HttpResponseBase:
    """Download a session: its JSONL byte for byte, Markdown, or one HTML page."""
    session = session_or_404(session_id)
    name = f"{session.session_id}"
    if fmt == "jsonl":
        try:
            f = open_regular(session.path, root=session.project.root)
        except (OSError, UnsafePath):
            # A link or a FIFO planted in a root must never be served.
            raise Http404("the session file is gone") from None
        return FileResponse(f, as_attachment=True, filename=f"{name}.jsonl")
    response: StreamingHttpResponse
    if fmt == "md":
        response = StreamingHttpResponse(
            exporting.markdown_chunks(session), content_type="text/markdown; charset=utf-8"
        )
    elif fmt == "html":
        response = StreamingHttpResponse(
            exporting.html_chunks(session), content_type="text/html; charset=utf-8"
        )
    else:
        raise Http404("unknown export format")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response
