"""The thread that owns a run: it reads the CLI's stream, imports the session, records the end.

The CLI writes the session file itself; each event it prints says the file may
have grown, so the session is re-indexed (an append: constant time) at most four
times a second, and once more at the end. The pages only read the index, so the
answer appears in an open transcript through its live tail, with or without the
watcher running.
"""

from __future__ import annotations

import logging
import subprocess
import time
from typing import IO

import orjson
from django.db import close_old_connections, connection
from django.utils import timezone

from ...models import Run, Session
from ..branching import BranchError
from ..branching.registering import reindex
from ..roots import UnsafePath
from .undoing import take_back

logger = logging.getLogger("branchboard.runs")

IMPORT_EVERY = 0.25  # seconds between imports while the CLI writes
STDERR_TAIL = 4000  # characters of stderr kept with a run
MESSAGE_LIMIT = 4000


def follow(run_pk: int, proc: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
    """Run in a thread of the process that started the CLI, until the CLI exits."""
    try:
        failure = _read_stream(run_pk, proc)
        status = proc.wait()
        stderr.seek(0, 2)
        size = stderr.tell()
        stderr.seek(max(0, size - STDERR_TAIL))
        tail = stderr.read().decode("utf-8", "replace")
        stderr.close()
        finish(run_pk, status=status, failure=failure, stderr_tail=tail)
    except Exception:
        logger.exception("run %s: following the CLI failed", run_pk)
    finally:
        connection.close()


def _read_stream(run_pk: int, proc: subprocess.Popen[bytes]) -> str:
    """Follow stdout (JSON events, one per line); the CLI's own error message, if any."""
    failure = ""
    last = 0.0
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "result" and event.get("is_error"):
            said = event.get("result") or event.get("error") or event.get("subtype") or ""
            failure = str(said)[:MESSAGE_LIMIT]
        elif event.get("type") == "system" and event.get("subtype") == "api_retry":
            # The CLI waits and tries again: say why while it does.
            Run.objects.filter(pk=run_pk, ended_at__isnull=True).update(message=_retrying(event))
        now = time.monotonic()
        if now - last >= IMPORT_EVERY:
            last = now
            import_session(run_pk)
    return failure


def _retrying(event: dict) -> str:
    delay = event.get("retry_delay_ms")
    wait = f" in {delay / 1000:.0f} s" if isinstance(delay, (int, float)) else ""
    return (
        f"The API answered {event.get('error_status')} ({event.get('error')}); the CLI tries "
        f"again{wait} (attempt {event.get('attempt')} of {event.get('max_retries')})."
    )[:MESSAGE_LIMIT]


def finish(run_pk: int, *, status: int, failure: str, stderr_tail: str) -> None:
    """Record how the run ended (over "lost", which a page may have guessed first)."""
    close_old_connections()
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
    close_old_connections()
    session = Session.objects.select_related("project").filter(runs__pk=run_pk).first()
    if session is None:
        return
    try:
        reindex(session)
    except (BranchError, OSError) as exc:
        logger.warning("run %s: importing %s failed: %s", run_pk, session.path, exc)
