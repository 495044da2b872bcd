"""The write actions behind the pages: branch, fork, edit & fork, rewind, undo.

Each works as a plain form post that redirects (no JavaScript needed) and, with
htmx, answers with a client redirect on success or the engine's message in place
on failure. Inputs are checked by `services.branching.inputs`, as for the API and
the commands; the engine's guards decide; nothing here writes a file itself.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from ..models import Project, Session
from ..permissions import can_manage_worktrees, can_run, require_write
from ..refusals import status_of
from ..resume import NO_COMMAND, resume_command
from ..selectors.facts import abandoned_after
from ..services.archive.restoring import session_restore
from ..services.audit import PAGE, actor_of_request, audit_record
from ..services.branching import (
    BranchError,
    session_rewind,
    session_rewind_check,
    session_rewind_undo,
)
from ..services.branching.inputs import fork_input, rewind_input
from ..services.fresh_start import fresh_start
from ..services.worktrees import NeedsConfirmation, fork_where_asked
from ..services.worktrees import worktree_remove as remove_worktree
from .sessions import HtmxHttpRequest, session_or_404


def _turns(count: int) -> str:
    return f"{count} turn{'' if count == 1 else 's'}"


LANDING = "landing"


def _what_was_kept(turn: int | None, include_turn: bool, leaf: str | None, turns: int) -> str:
    """The words for what a branch, fork or edit & fork took from its source."""
    if leaf:
        return f"an abandoned branch ({_turns(turns)}) brought back"
    if turn is None:
        return f"a branch with all {_turns(turns)}"
    if include_turn:
        return f"branched from turn {turn}, with {_span(turn)}"
    kept = f"with {_span(turn - 1)}" if turn > 1 else "with no turn"
    return f"an edit & fork before turn {turn}, {kept}; prompt {turn} is yours to edit"


def _span(last: int) -> str:
    return "turn 1" if last == 1 else f"turns 1\u2013{last}"


def _done(request: HtmxHttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _failed(
    request: HtmxHttpRequest, session: Session, error: BranchError, retry: QueryDict | None = None
) -> HttpResponse:
    # A refused form post goes back to the transcript with the message; a refused
    # page (GET) or htmx request answers with the message and the error's status.
    # One that needs confirming answers with a form that posts it again, confirmed.
    if request.htmx or request.method == "GET" or retry is not None:
        template = "sessions_app/action_error.html"
        if request.htmx:
            template += "#action-error"
        fields = [
            (k, v)
            for k, v in (retry or {}).items()
            if k not in ("csrfmiddlewaretoken", "leave_changes")
        ]
        context = {"error": error, "session": session, "retry": fields if retry else None}
        return render(request, template, context, status=status_of(error))
    messages.error(request, str(error))
    return redirect(reverse("sessions:session_detail", args=[session.ref]))


@require_POST
@require_write
def fork(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Branch the whole session (no turn), fork from a turn, or edit & fork before it."""
    session = session_or_404(session_id)
    try:
        asked = fork_input(
            turn=request.POST.get("turn"),
            include_turn=request.POST.get("mode") != "before",
            title=request.POST.get("title", "").strip() or None,
            leaf=request.POST.get("leaf"),  # present but empty is refused, not a branch
        )
        if asked.fresh_start:
            return _fresh_start(request, session)
        worktree = None
        if request.POST.get("worktree"):
            if not can_manage_worktrees(request.user):
                raise PermissionDenied("You may not fork into git worktrees.")
            # Not trimmed: a name with spaces is refused here as by the API and the command.
            worktree = request.POST.get("worktree_name", "")
        forked = fork_where_asked(
            session=session,
            asked=asked,
            worktree=worktree,
            leave_changes=bool(request.POST.get("leave_changes")),
            with_files=bool(request.POST.get("with_files")),
        )
    except BranchError as error:
        retry = request.POST if isinstance(error, NeedsConfirmation) else None
        return _failed(request, session, error, retry=retry)
    new, plan = forked.session, forked.plan
    forked.audit(actor_of_request(request, origin=PAGE), source=session, turn=asked.turn)
    where = f" in the new worktree {plan.path} (branch {plan.branch})" if plan else ""
    resume = resume_command(new) or NO_COMMAND
    # A branch looks just like its source: the note says what was made and from which
    # session, with a link back to it. "landing": the page shows it where the redirect
    # lands (the run box, when there is one), not only at its top.
    messages.success(
        request,
        format_html(
            'Created “{}” ({}){}: {} of <a href="{}" class="source-link">“{}”</a>.'
            " Resume it with: {}",
            new.title,
            new.session_id,
            where,
            _what_was_kept(asked.turn, asked.include_turn, asked.leaf, new.turn_count),
            reverse("sessions:session_detail", args=[session.ref]),
            session.title or session.session_id,
            resume,
        ),
        extra_tags=LANDING,
    )
    if forked.restored is not None:  # also part of what was made: said beside it
        messages.info(request, forked.restored.describe(), extra_tags=LANDING)
    url = reverse("sessions:session_detail", args=[new.ref])
    if not asked.include_turn:
        url += "?edit=1"
    if can_run(request.user):
        url += "#run"  # then type (or edit) the next prompt in the run box
    return _done(request, url)


def _fresh_start(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    """Before turn 1 nothing is kept: prompt 1 to edit and a fresh start, nothing written."""
    start = fresh_start(session=session)
    template = "sessions_app/fresh_start.html"
    if request.htmx:
        template += "#fresh-start"
    return render(request, template, {"session": session, "start": start})


@require_http_methods(["GET", "POST"])
@require_write
def rewind(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """GET: the confirmation; POST: rewind so the CLI resumes after turn N-1."""
    session = session_or_404(session_id)
    form = request.GET if request.method == "GET" else request.POST
    try:
        turn = rewind_input(turn=form.get("turn"))
        if request.method == "GET":
            session_rewind_check(session=session, turn=turn)
            leaving = session.turn_count - turn + 1
            context = {"session": session, "turn": turn, "leaving": leaving}
            return render(request, "sessions_app/rewind_confirm.html", context)
        rewound = session_rewind(session=session, turn=turn)
    except BranchError as error:
        return _failed(request, session, error)
    backup = rewound.rewind_undo.get("backup_id")
    actor = actor_of_request(request, origin=PAGE)
    audit_record(actor=actor, action="rewind", session=rewound, result=None, turn=turn)
    kept = mark_safe("")  # nothing to escape: empty
    if backup:
        kept = format_html(
            ' The old history is kept in session <a href="{}" class="source-link">{}</a>.',
            reverse("sessions:session_detail", args=[backup]),
            backup,
        )
    elif left := abandoned_after(rewound):
        # Qwen, Gemini: nothing removed; the old turns stay in the file, a branch of it.
        newest = max(left, key=lambda b: b.get("line") or 0)
        kept = format_html(
            " The old turns are kept in the file as an abandoned branch:"
            ' <a href="{}?leaf={}" class="source-link">open it</a>.',
            reverse("sessions:session_detail", args=[rewound.ref]),
            quote(newest["leaf_uuid"]),
        )
    messages.success(
        request,
        format_html("Rewound to turn {}: {} now.{}", turn, _turns(rewound.turn_count), kept),
    )
    return _done(request, reverse("sessions:session_detail", args=[rewound.ref]))


@require_POST
@require_write
def rewind_undo(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Undo the last rewind, while the session has not changed since."""
    session = session_or_404(session_id)
    try:
        restored = session_rewind_undo(session=session)
    except BranchError as error:
        return _failed(request, session, error)
    actor = actor_of_request(request, origin=PAGE)
    audit_record(actor=actor, action="rewind_undo", session=restored, result=None, turn=None)
    messages.success(request, f"Rewind undone: {_turns(restored.turn_count)} again.")
    return _done(request, reverse("sessions:session_detail", args=[restored.ref]))


@require_POST
@require_write
def restore(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Write a session whose file was removed back to disk from the archive."""
    session = session_or_404(session_id)
    try:
        written = session_restore(session=session)
    except BranchError as error:
        return _failed(request, session, error)
    actor = actor_of_request(request, origin=PAGE)
    audit_record(actor=actor, action="restore", session=session, result=None, turn=None)
    more = f" and {len(written) - 1} more of its files" if len(written) > 1 else ""
    messages.success(request, f"Restored to disk: {written[0]}{more} (resume it in its CLI again).")
    for problem in written.problems:
        messages.warning(request, f"Not restored: {problem}")
    return _done(request, reverse("sessions:session_detail", args=[session.ref]))


@require_POST
@require_write
def worktree_remove(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Remove an agent worktree listed on the project page (its guards decide)."""
    if not can_manage_worktrees(request.user):
        raise PermissionDenied("You may not remove git worktrees.")
    project = get_object_or_404(Project, pk=pk)
    back = reverse("sessions:project_detail", args=[project.pk]) + "#worktrees"
    if project.namespace:
        # Its path is text a machine pushed: the hub runs no git there, whatever it names.
        messages.error(request, f"{project.namespace}'s worktrees are removed on that machine")
        return redirect(back)
    try:
        # Only a worktree this project lists, by the full path the list shows.
        removal = remove_worktree(
            request.POST.get("path", ""),
            listed_in=Path(project.path),
            discard=bool(request.POST.get("discard")),
            live_ok=bool(request.POST.get("live_ok")),
            foreign=bool(request.POST.get("foreign")),
        )
    except BranchError as error:
        messages.error(request, str(error))
        return redirect(back)
    actor = actor_of_request(request, origin=PAGE)
    audit_record(
        actor=actor,
        action="worktree_remove",
        session=None,
        result=None,
        turn=None,
        detail=removal.describe(),
    )
    messages.success(request, removal.describe()[:1].upper() + removal.describe()[1:] + ".")
    return redirect(back)
