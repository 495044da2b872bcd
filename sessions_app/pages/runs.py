"""Carry on in the browser: send a prompt to the session's real CLI, follow the run, stop it.

Only where `permissions.can_run` allows (a local dashboard, or a team server that
set BRANCHBOARD_ALLOW_RUNS=1, for users with run_agents); plain form posts with
Django's CSRF check, every start and stop audited. No API route reaches them.
The answer itself appears through the transcript's live tail as the CLI writes
the session file; the run panel only says how the run stands.
"""

from __future__ import annotations

import os
import uuid

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from ..formats.running import MODES
from ..models import Run, Session
from ..permissions import can_run
from ..refusals import status_of
from ..services.audit import PAGE, actor_of_request, audit_record
from ..services.branching import BranchError
from ..services.runs import RunError, cli_missing, current_run, run_refresh, run_start, run_stop
from .sessions import HtmxHttpRequest, session_or_404


def _allowed(request: HtmxHttpRequest) -> None:
    if not can_run(request.user):
        raise PermissionDenied("Running the agent CLIs from the pages is not allowed here.")


def _panel(
    request: HtmxHttpRequest,
    session: Session,
    run: Run | None,
    *,
    error: str = "",
    status: int = 200,
    sent: dict[str, str] | None = None,
) -> HttpResponse:
    """The run panel (a page saying why, without htmx, for a refusal); `sent` refills the form."""
    if run is None:
        run = session.runs.first()
        if run is not None:
            run = run_refresh(run)
    context = {
        "session": session,
        "run": run,
        "run_error": error,
        "modes": MODES.values(),
        # A pushed session's folder is another machine's: the hub's disk is not looked at.
        "run_here": not session.namespace and bool(session.cwd) and os.path.isdir(session.cwd),
        "run_no_cli": cli_missing(session),
        "sent": sent or {},
    }
    if request.htmx:
        template = "sessions_app/transcript.html#run-panel"
        return render(request, template, context, status=status)
    if error:
        # The refusal and the form as it was sent, to correct and send again.
        return render(request, "sessions_app/run_refused.html", context, status=status)
    return redirect(reverse("sessions:session_detail", args=[session.ref]) + "#run")


@require_POST
def start(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Send the prompt: the session's CLI is started on it (409 while a run is going)."""
    _allowed(request)
    session = session_or_404(session_id)
    actor = actor_of_request(request, origin=PAGE)
    sent = {name: request.POST.get(name, "") for name in ("prompt", "mode", "model")}
    try:
        run = run_start(session=session, **sent, actor=actor)
    except BranchError as error:  # a RunError, or the session's file could not be read
        # Whatever the refusal, the typed prompt comes back in the box.
        status = status_of(error)
        return _panel(request, session, None, error=str(error), status=status, sent=sent)
    mode = MODES[run.mode].label
    detail = f"{run.get_state_display()}; {mode}; {' '.join(run.command)}"
    audit_record(actor=actor, action="run", session=session, result=None, turn=None, detail=detail)
    return _panel(request, session, run)


@require_POST
def stop(request: HtmxHttpRequest, session_id: uuid.UUID, pk: int) -> HttpResponse:
    """Stop a run: interrupted, then terminated, then killed if it will not end."""
    _allowed(request)
    session = session_or_404(session_id)
    run = session.runs.filter(pk=pk).first()
    if run is None:
        raise Http404("no such run")
    try:
        run = run_stop(run)
    except RunError as error:
        return _panel(request, session, run, error=str(error), status=status_of(error))
    actor = actor_of_request(request, origin=PAGE)
    audit_record(
        actor=actor, action="run_stop", session=session, result=None, turn=None, detail=f"run {pk}"
    )
    return _panel(request, session, run)


@require_safe
def panel(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """How the session's latest run stands (polled while it runs)."""
    _allowed(request)
    session = session_or_404(session_id)
    going = current_run(session)
    return _panel(request, session, going)
