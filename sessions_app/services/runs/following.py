"""The thread that owns a run: it reads the CLI's stream, imports the session, records the end.

The CLI writes the session file itself, and not always next to an event it
prints: a tool call's record may land just after its event, and the tool may then
run for minutes with nothing printed. So the file itself is watched: four times a
second its size and mtime are looked at, and a change is imported (an append:
constant time); once more at the end. The pages only read the index, so the
answer appears in an open transcript through its live tail, with or without the
watcher running.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from typing import IO

import orjson
from django.db import connection
from django.utils import timezone

from ...formats.running import run_event
from ...models import Run, Session
from ..branching import BranchError
from ..branching.registering import reindex
from ..process_groups import group_members
from ..roots import UnsafePath
from .undoing import take_back

logger = logging.getLogger("branchboard.runs")

IMPORT_EVERY = 0.25  # seconds between looks at the session file while the CLI runs
STDERR_TAIL = 4000  # characters of stderr kept with a run
MESSAGE_LIMIT = 4000


def follow(run_pk: int, proc: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
    """Run in a thread of the process that started the CLI, until its process group ends."""
    try:
        said: dict[str, str] = {}
        reader = threading.Thread(
            target=_read_stream, args=(run_pk, proc, said), name=f"run-{run_pk}-out", daemon=True
        )
        reader.start()
        status = _import_until_exit(run_pk, proc)
        # The CLI's own helpers (same process group) may still be finishing its writes.
        while group_members(proc.pid):
            time.sleep(0.1)
        reader.join(timeout=3)
        stderr.seek(0, 2)
        size = stderr.tell()
        stderr.seek(max(0, size - STDERR_TAIL))
        tail = stderr.read().decode("utf-8", "replace")
        stderr.close()
        finish(run_pk, status=status, failure=said.get("failure", ""), stderr_tail=tail)
    except Exception:
        logger.exception("run %s: following the CLI failed", run_pk)
    finally:
        connection.close()


def _import_until_exit(run_pk: int, proc: subprocess.Popen[bytes]) -> int:
    """Import the run's session whenever its file changed, until the CLI exits; its status."""
    path = Session.objects.filter(runs__pk=run_pk).values_list("path", flat=True).first()
    seen = _file_state(path)
    while True:
        try:
            return proc.wait(timeout=IMPORT_EVERY)
        except subprocess.TimeoutExpired:
            pass
        now = _file_state(path)
        if now != seen:
            seen = now
            import_session(run_pk)


def _file_state(path: str | None) -> tuple[int, int] | None:
    try:
        stat = os.stat(path) if path else None
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns) if stat else None


def _read_stream(run_pk: int, proc: subprocess.Popen[bytes], said: dict[str, str]) -> None:
    """Follow stdout (JSON events, one per line): note the CLI's error and its retries
    (`formats.running.run_event` reads each CLI's events)."""
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            said_now = run_event(event) if isinstance(event, dict) else None
            if said_now is None:
                continue
            if said_now.failure:
                said["failure"] = said_now.failure[:MESSAGE_LIMIT]
            elif said_now.note:
                # The CLI waits and tries again: say why while it does.
                Run.objects.filter(pk=run_pk, ended_at__isnull=True).update(
                    message=said_now.note[:MESSAGE_LIMIT]
                )
    finally:
        connection.close()


def finish(run_pk: int, *, status: int, failure: str, stderr_tail: str) -> None:
    """Record how the run ended (over "lost", which a page may have guessed first)."""
    run = Run.objects.get(pk=run_pk)
    if run.stop_requested_at is not None:
        state = Run.State.STOPPED
    elif status == 0 and not failure:
        state = Run.State.FINISHED
    else:
        state = Run.State.FAILED
    message = failure
    if state == Run.State.FAILED and not message:
        lines = [line for line in stderr_tail.splitlines() if line.strip()]
        message = "\n".join(lines[-10:]) or f"the CLI exited with status {status}"
    if state == Run.State.FAILED:
        try:
            note = take_back(run)
        except (OSError, UnsafePath) as exc:
            note = f"What the failed run wrote could not be taken back: {exc}"
        message = f"{message}\n\n{note}" if note else message
    ended = (
        Run.objects.filter(pk=run_pk)
        .exclude(state__in=[Run.State.FINISHED, Run.State.FAILED, Run.State.STOPPED])
        .update(
            state=state,
            ended_at=run.ended_at or timezone.now(),
            exit_status=status,
            message=message[:MESSAGE_LIMIT],
            stderr_tail=stderr_tail,
        )
    )
    if ended:
        import_session(run_pk)


def import_session(run_pk: int) -> None:
    """Bring the run's session up to date in the index; a failure is logged, not raised."""
    session = Session.objects.select_related("project").filter(runs__pk=run_pk).first()
    if session is None:
        return
    try:
        reindex(session)
    except (BranchError, OSError) as exc:
        logger.warning("run %s: importing %s failed: %s", run_pk, session.path, exc)
