"""The transcript page, and the live tail that follows a session as it grows."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from django.contrib.messages import get_messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from .. import selectors
from ..formats.documents import is_document
from ..formats.running import MODES
from ..models import Run, Session
from ..permissions import can_manage_worktrees, can_run, can_write
from ..resume import in_legacy_folder, resume_command
from ..selectors.facts import abandoned_after
from ..selectors.usage.sessions import session_usage
from ..selectors.worktrees import file_backups_kept, worktree_possible
from ..services.archive.health import archive_damage
from ..services.archive.versions import earlier_versions
from ..services.branching import branching_refusal, rewind_refusal
from ..services.runs import cli_missing, run_refresh
from ..transcript import PAGE_LIMITS, Page, build_page
from .actions import LANDING
from .sessions import LEAF_RE, HtmxHttpRequest, bounded_int, session_or_404


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
    after = bounded_int(request.GET.get("after"), 0, high=total)
    last = after + selectors.PAGE_TURNS
    # `from` and `skip`: the page starts inside turn after+1, at this record and item.
    start = (bounded_int(request.GET.get("from"), 0), bounded_int(request.GET.get("skip"), 0))
    if branch:
        records = selectors.branch_records(
            session, branch, first_turn=after + 1, last_turn=last, show_all=show_all
        )
        page = build_page(
            records, session.agent, show_all=show_all, limits=PAGE_LIMITS, start=start
        )
        turns, next_page, live = page.turns, _next_page(page, last, total), None
    else:
        turns, next_page, live = _active_page(session, after, start, show_all)
    context = {
        "session": session,
        "turns": turns,
        "next_page": next_page,
        "live": live,
        "show_all": show_all,
        "leaf": leaf,
        # The words a search hit opened the page with: the rest of the turn marks them too.
        "hl": searched_words(request),
        "crumb_here": "abandoned branch" if leaf else (f"from turn {after + 1}" if after else ""),
        "branch_turns": total,
        "resume_command": resume_command(session),
        "legacy_folder": in_legacy_folder(session),
        "subagents": selectors.subagents_of(session),
        # An agent read but not branched here: no action is offered, and the page says why.
        "branch_refusal": (cannot_branch := branching_refusal(session.agent)),
        "can_write": can_write(request.user) and not cannot_branch,
        "can_worktree": (
            not cannot_branch
            and not session.namespace
            and can_manage_worktrees(request.user)
            and worktree_possible(session)
        ),
        # A machine's pushed session on a hub: only what makes new files is offered.
        "pushed": bool(session.namespace),
        # An older release's one-document file is forked, never rewound in place.
        "can_rewind": session.agent_profile.can_rewind
        and not is_document(session.agent_profile.documents, Path(session.path)),
    }
    if context["can_rewind"]:
        # A removed file (only the archive holds it) is not rewound: say why, offer no button.
        context["rewind_refusal"] = rewind_refusal(session)
        context["can_rewind"] = not context["rewind_refusal"]
    # No run panel for a CLI that cannot be carried on from here (its door refuses too).
    runnable = not cannot_branch and session.agent_profile.run_args is not None
    if can_run(request.user) and not branch and runnable and not session.namespace:
        latest = session.runs.first()
        context.update(can_run=True, modes=MODES.values(), run=latest and run_refresh(latest))
        context["run_here"] = bool(session.cwd) and os.path.isdir(session.cwd)
        # Said before a prompt is typed, not only after Send: the CLI is not installed.
        context["run_no_cli"] = cli_missing(session)
        # What an action just made is said in the run box, where its redirect lands
        # (`#run`): the banner at the top of a long transcript is out of sight there.
        # Only a whole page reads the messages: a fragment (a poll of the live page)
        # that read them would mark them used and the page would never show them.
        if not request.htmx:
            landing = [m for m in get_messages(request) if LANDING in m.tags.split()]
            context["landing"] = landing
    if context["can_worktree"]:
        context["file_backups"] = file_backups_kept(session)
        context["agent_label"] = session.agent_profile.label
    template = "sessions_app/transcript.html"
    if request.htmx and (after or start[0]):
        template += "#turn-page"
    else:
        context["children"] = session.children.order_by("id")
        context["usage_total"], context["usage_models"] = session_usage(session)
        context["undo_available"] = selectors.undo_available(session)
        context["rewind_undone"] = selectors.rewind_undone(session)
        context["edit_prompt"] = selectors.edit_prompt(session)
        # An edit & fork's prompt is edited in the run box ("Carry on"), prefilled with
        # it, where it can be sent: not in a second box to copy it down from by hand.
        # It is read from the new session (its source's prompt N, until the fork is
        # carried on), not carried by the redirect: it holds through a reload, and a
        # prompt of up to 100,000 characters fits neither an address nor a cookie.
        run = context.get("run")
        context["edit_in_run_box"] = (
            context["edit_prompt"] is not None
            and context.get("run_here", False)
            and not context.get("run_no_cli")
            and not (isinstance(run, Run) and not run.ended)
        )
        # The file is gone and the archive's copy is damaged: the text is the index's alone.
        context["archive_damage"] = archive_damage(session)
        context["earlier_versions"] = earlier_versions(session)
    return render(request, template, context)


def searched_words(request: HttpRequest) -> str:
    """The page's `?hl=` words, bounded like a search's query, for the links to its chunks."""
    return request.GET.get("hl", "").replace("\x00", "").strip()[:500]


def _active_page(
    session: Session, after: int, start: tuple[int, int], show_all: bool
) -> tuple[list, tuple[str, str] | None, dict[str, str] | None]:
    """A page of the active branch after turn `after` (from `start` inside the next turn):
    its turns, the query of the page after it, and its live tail if it reaches the end."""
    last = after + selectors.PAGE_TURNS
    records = selectors.page_records(
        session,
        first_turn=after + 1,
        last_turn=last,
        from_line=start[0],
        limit=PAGE_LIMITS.records + 1,
        show_all=show_all,
    )
    page = build_page(records, session.agent, show_all=show_all, limits=PAGE_LIMITS, start=start)
    _mark_branches(session, page.turns)
    next_page = _next_page(page, last, session.turn_count)
    if next_page is None and page.turns:
        # A rewind that appends (Qwen, Gemini) leaves its turns after the last one.
        page.turns[-1].abandoned_after = abandoned_after(session)
    live = None if next_page else _live_tail(session, page.turns, start, show_all)
    return page.turns, next_page, live


def _mark_branches(session: Session, turns: list) -> None:
    """Each turn learns the abandoned branches that split off at it, and what a rewind leaves."""
    by_turn: dict[int, list[dict]] = {}
    for abandoned in session.abandoned:
        by_turn.setdefault(abandoned["at_turn"], []).append(abandoned)
    for turn in turns:
        turn.abandoned = by_turn.get(turn.number, []) if turn.number is not None else []
        turn.leaving = session.turn_count - (turn.number or 0) + 1


def _live_tail(
    session: Session, turns: list, start: tuple[int, int], show_all: bool
) -> dict[str, str]:
    """How a page that ends at the session's end asks for what comes next: the last turn
    shown (from where this page starts it) and the number of lines the page has seen."""
    tail = turns[-1] if turns else None
    after = max((tail.number or 1) - 1, 0) if tail else 0
    begin = start if tail is not None and tail is turns[0] and tail.continued else (0, 0)
    query = f"lines={session.line_count}&after={after}&from={begin[0]}&skip={begin[1]}"
    if show_all:
        query += "&all=1"
    return {"url": reverse("sessions:session_live", args=[session.ref]) + "?" + query}


@require_safe
def session_live(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Polled by an open transcript that shows the session's end (about once a second).

    While the session has the lines the page saw: 204 after one small query. Once it
    has more, the last turn shown again and every turn after it (the page replaces its
    tail with them), with the counts in the header; a session that got shorter (a
    rewind) asks the page to reload.
    """
    known = bounded_int(request.GET.get("lines"), 0)
    lines = selectors.session_lines(session_id)
    if lines is None:
        raise Http404("no such session")
    if lines == known:
        return HttpResponse(status=204)
    session = session_or_404(session_id)
    after = bounded_int(request.GET.get("after"), 0)
    if lines < known or after > session.turn_count:
        return HttpResponse(status=204, headers={"HX-Refresh": "true"})
    show_all = request.GET.get("all") == "1"
    start = (bounded_int(request.GET.get("from"), 0), bounded_int(request.GET.get("skip"), 0))
    turns, next_page, live = _active_page(session, after, start, show_all)
    context = {
        "session": session,
        "turns": turns,
        "next_page": next_page,
        "live": live,
        "live_update": True,
        "show_all": show_all,
        "leaf": "",
        "can_write": can_write(request.user) and not branching_refusal(session.agent),
    }
    return render(request, "sessions_app/transcript.html#turn-page", context)


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
