"""Runs of an agent's CLI on a session, from the pages: started, followed, stopped.

Running agents from a web page is remote code execution by design. The edges
check who may (`permissions.can_run`: a local dashboard, or a team server with
BRANCHBOARD_ALLOW_RUNS=1 and the run_agents permission); here every run is
checked again and recorded:

- one run per session at a time (a database constraint: a double click gets the
  refusal, never a second CLI);
- the CLI starts in the session's folder as its own process group, no shell, the
  prompt one argument (`formats.running`); the thread that started it follows it
  (`following`) and imports the session file as it grows;
- a stop interrupts the group (SIGINT), then terminates it after
  RUN_STOP_GRACE seconds, then kills it; the CLI writes whole lines, so the file
  stays whole;
- a run whose process is gone (the server restarted while it ran) is shown as
  ended ("lost") the next time anyone looks, never as running.

Modules: `process` (the process group, found again by `services.process_groups`), `following` (the
thread that owns a run), `undoing` (a failed run takes back what it appended).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection
from django.utils import timezone

from ...formats.running import BadRunInput, check_run_input, shown_command
from ...models import Run, Session
from ..audit import Actor
from ..branching import BranchError, BranchingUnsupported, check_can_branch
from ..branching.registering import reindex
from ..errors import PushedReadOnly, check_not_pushed
from ..process_groups import alive, start_time
from .following import follow
from .process import signal_group, spawn
from .undoing import state_before

__all__ = [
    "RunBusy",
    "RunError",
    "RunRefused",
    "cli_missing",
    "current_run",
    "run_refresh",
    "run_start",
    "run_stop",
]


# A run is recorded a moment before its process exists: not "gone" while it starts.
STARTING = timedelta(seconds=30)


class RunError(BranchError):
    """A run was refused; nothing was started."""


class RunRefused(RunError):
    """This run cannot be started (bad input, no CLI, the folder is not here)."""


class RunBusy(RunError):
    """The session has a run going."""


def current_run(session: Session) -> Run | None:
    """The session's run that is going now, if any (a lost one is marked ended first)."""
    run = session.runs.filter(ended_at__isnull=True).first()
    if run is not None:
        run_refresh(run)
    return run if run is not None and not run.ended else None


def cli_missing(session: Session) -> str:
    """Why the session's CLI cannot be started here ("": it can): no such command on PATH.

    The run box asks this before offering the form, as `run_start` does before a run.
    """
    agent = session.agent_profile
    command = settings.RUN_COMMANDS.get(agent.name) or agent.cli
    if shutil.which(command) is not None:
        return ""
    variable = f"BRANCHBOARD_{agent.name.upper()}_COMMAND"
    return (
        f"{command}: no such command on this machine's PATH; install {agent.label} "
        f"or set {variable} to its path"
    )


def run_start(*, session: Session, prompt: str, mode: str, model: str, actor: Actor) -> Run:
    """Start the session's CLI on `prompt`; RunError when it cannot be."""
    try:
        prompt, mode, model = check_run_input(prompt, mode, model)
    except BadRunInput as exc:
        raise RunRefused(str(exc)) from None
    try:
        check_can_branch(session)
        # The hub never runs a CLI on a pushed session: its machine does.
        check_not_pushed(session, "a run")
    except (BranchingUnsupported, PushedReadOnly) as exc:
        raise RunRefused(str(exc)) from None
    agent = session.agent_profile
    if agent.run_args is None:
        raise RunRefused(f"{agent.label} sessions cannot be carried on from here")
    cwd = session.cwd
    if not cwd or not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise RunRefused(
            f"the folder this session ran in ({cwd or 'not recorded'}) is not on this machine"
        )
    command = settings.RUN_COMMANDS.get(agent.name) or agent.cli
    executable = shutil.which(command)
    if executable is None:
        raise RunRefused(cli_missing(session) or f"{command}: no such command")
    going = current_run(session)
    if going is not None:
        raise RunBusy(_busy(going))
    session = reindex(session)  # the file as the run finds it, for a failure to go back to
    args = agent.run_args(session_id=str(session.session_id), prompt=prompt, mode=mode, model=model)
    try:
        run = Run.objects.create(
            session=session,
            user=actor.user,
            actor=actor.name[:150],
            prompt=prompt,
            mode=mode,
            model=model,
            command=shown_command(command, args, prompt),
            cwd=cwd,
            file_before=state_before(session),
        )
    except IntegrityError:
        going = session.runs.filter(ended_at__isnull=True).first()
        raise RunBusy(_busy(going) if going else "the session has a run going") from None
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 (the following thread closes it)
    try:
        proc = spawn([executable, *args], cwd=cwd, stderr=stderr)
    except OSError as exc:
        stderr.close()
        Run.objects.filter(pk=run.pk).update(
            state=Run.State.FAILED,
            ended_at=timezone.now(),
            message=f"{command} could not be started: {exc.strerror or exc}",
        )
        run.refresh_from_db()
        return run
    run.pid, run.pid_start = proc.pid, start_time(proc.pid)
    run.save(update_fields=["pid", "pid_start"])
    threading.Thread(
        target=follow, args=(run.pk, proc, stderr), name=f"run-{run.pk}", daemon=True
    ).start()
    return run


def _busy(run: Run) -> str:
    return (
        f"run {run.pk} ({run.actor}, started {run.started_at:%H:%M:%S} UTC) is still going "
        "on this session; stop it or wait for it"
    )


def run_stop(run: Run) -> Run:
    """Interrupt the run's CLI; it is terminated, then killed, if it does not end."""
    if run.ended:
        raise RunRefused(f"run {run.pk} has ended already ({run.get_state_display()})")
    if run.pid is None:
        raise RunBusy(f"run {run.pk} is still starting; stop it again in a moment")
    Run.objects.filter(pk=run.pk, stop_requested_at__isnull=True).update(
        stop_requested_at=timezone.now()
    )
    run.refresh_from_db()
    signal_group(run.pid, run.pid_start, signal.SIGINT)
    grace = settings.RUN_STOP_GRACE
    for delay in (grace, 2 * grace):
        timer = threading.Timer(delay + 0.1, _escalate_later, args=(run.pk,))
        timer.daemon = True
        timer.start()
    return run


def _escalate_later(run_pk: int) -> None:
    try:
        run = Run.objects.filter(pk=run_pk).first()
        if run is not None:
            run_refresh(run)
    finally:
        connection.close()


def run_refresh(run: Run) -> Run:
    """Bring a run's state up to date: a stop escalated, a gone process marked ended."""
    if run.ended:
        return run
    starting = run.pid is None and timezone.now() - run.started_at < STARTING
    if not starting and not alive(run.pid, run.pid_start):
        Run.objects.filter(pk=run.pk, ended_at__isnull=True).update(
            state=Run.State.LOST,
            ended_at=timezone.now(),
            message="its process is gone (the server stopped while it ran); its exit "
            "status is not known",
        )
    elif run.stop_requested_at is not None and run.pid is not None:
        waited = timezone.now() - run.stop_requested_at
        grace = timedelta(seconds=settings.RUN_STOP_GRACE)
        if waited >= 2 * grace:
            signal_group(run.pid, run.pid_start, signal.SIGKILL)
        elif waited >= grace:
            signal_group(run.pid, run.pid_start, signal.SIGTERM)
    run.refresh_from_db()
    return run
