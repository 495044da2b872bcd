"""The watching importer's passes: over every file, or over the paths events name.

`watch_tick` is one wake of `import_sessions --watch`: every file is looked at when
the watch starts, every `BRANCHBOARD_RESCAN_SECONDS`, to try a failed pass again, and
after a batch of events too big to trust; in between only the named paths are imported
(and search and usage catch up with their sessions alone), so a tick costs the same
whatever the size of the roots. Passes log (to `branchboard.importer`) and never raise.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.db import close_old_connections, connections

from ..models.import_status import ImportStatus
from .importing import sessions_import
from .progress import ImportTracker
from .searching import SearchReport, search_refresh
from .usage import UsageReport, usage_refresh

logger = logging.getLogger("branchboard.importer")
# What catches up with the records after an import, in this order, with the phase the
# progress banner names: the one list the passes, the ticks and the command go through.
CATCH_UP: list[tuple[str, Callable[..., SearchReport | UsageReport]]] = [
    (ImportStatus.SEARCH, search_refresh),
    (ImportStatus.USAGE, usage_refresh),
]
# A failed pass (a database lock held too long, a bad file) is tried again after
# FIRST_DELAY seconds, then twice as long each time, never longer than MAX_DELAY.
FIRST_DELAY, MAX_DELAY = 1.0, 60.0
# A batch of events naming more paths than this is not trusted to name every change
# (the kernel's queue may have overflowed, and watchfiles drops that notice): every
# file is looked at instead.
MOST_NAMED = 1000


@dataclass
class Retry:
    """When the watcher imports again though nothing changed: after a failed pass."""

    delay: float = 0.0
    at: float | None = None  # a monotonic time; None: none due

    def due(self, now: float) -> bool:
        """Whether a failed pass is to be tried again at `now`."""
        return self.at is not None and now >= self.at


@dataclass
class Rescan:
    """When the watcher next looks at every file, not only those the events name."""

    every: float  # seconds
    at: float | None = None  # a monotonic time; None: at once (the watch has just started)

    def due(self, now: float) -> bool:
        """Whether every file is to be looked at at `now`."""
        return self.at is None or now >= self.at


def watch_tick(
    roots: list[Path],
    named: set[str],
    reported: set[str],
    retry: Retry,
    rescan: Rescan,
    now: Callable[[], float] = time.monotonic,
) -> None:
    """One wake of the watcher, with the paths its events name (none on a timeout).

    Every file is looked at when the watch starts, every `rescan.every` seconds, to
    try a failed pass again, and when the batch is too big to trust; else only the
    named paths are imported (a change missed by the events is found by the next
    look at every file).
    """
    started = now()
    if rescan.due(started) or retry.due(started) or len(named) > MOST_NAMED:
        rescan.at = started + rescan.every
        watch_pass(roots, reported, retry, now=now)
    elif named:
        watch_pass(roots, reported, retry, paths=[Path(p) for p in named], now=now)


def watch_pass(
    roots: list[Path],
    reported: set[str],
    retry: Retry,
    *,
    paths: list[Path] | None = None,
    now: Callable[[], float] = time.monotonic,
) -> None:
    """One pass of the watcher (every file, or only `paths`); a failed one is tried again
    later as a pass over every file, each time twice as late."""
    if import_pass(roots, reported) if paths is None else _import_paths(roots, paths, reported):
        if paths is not None and retry.at is not None:
            return  # only a pass over every file makes up for the failed one
        if retry.delay:
            logger.info("import works again")
        retry.delay, retry.at = 0.0, None
    else:
        retry.delay = min(max(retry.delay * 2, FIRST_DELAY), MAX_DELAY)
        retry.at = now() + retry.delay
        logger.warning("import pass failed; trying again in %.0f s", retry.delay)


def import_pass(roots: list[Path], reported: set[str] | None = None) -> bool:
    """One import of every root, logged; False when anything failed. Never raises.

    `reported`: problems already logged by earlier passes; each is logged once, until it
    goes away (then it is logged again if it comes back).
    """
    # A connection an earlier failure left broken (or PostgreSQL closed) is not reused.
    close_old_connections()
    tracker = ImportTracker()
    try:
        report = sessions_import(roots=roots, tracker=tracker)
    except Exception as exc:
        # The terminal shows this line without the traceback: it must say why on its own.
        logger.exception("import pass stopped by an error: %s", exc)
        connections.close_all()
        return False
    _log_new(report.errors, reported, "import")
    # Files left out are said (once, until they change) but fail nothing: another
    # pass would leave them out again.
    _log_new(report.left_out, reported, "left out")
    if report.sessions or report.subagents or report.errors or report.left_out:
        logger.info(report.summary())
    # An appended line is searchable, and counted, after the pass that imported it.
    for phase, refresh in CATCH_UP:
        try:
            done = refresh(progress=functools.partial(tracker.catch_up, phase))
        except Exception as exc:
            logger.exception("%s stopped by an error: %s", refresh.__name__, exc)
            connections.close_all()
            return False
        _log_new(done.errors, reported, refresh.__name__)
        if done.sessions:
            logger.info(done.summary())
    tracker.end()
    return not report.failed


def _import_paths(roots: list[Path], paths: list[Path], reported: set[str]) -> bool:
    """Import what is at `paths` alone, logged, then search and usage of the sessions it
    touched; False when anything failed. Never raises. No progress is shown: it is short."""
    # A connection a failure broke was closed by that failure; a good one is kept, not
    # closed as a pass over every file does: closing SQLite's checkpoints its WAL.
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and not conn.is_usable():
            conn.close()
    try:
        report = sessions_import(roots=roots, paths=paths)
    except Exception as exc:
        logger.exception("import of %s stopped by an error: %s", _named(paths), exc)
        connections.close_all()
        return False
    # Problems of files not named are not forgotten: only a pass over every file knows.
    _log_new(report.errors, reported, "import", forget=False)
    _log_new(report.left_out, reported, "left out", forget=False)
    if report.sessions or report.subagents or report.errors or report.left_out:
        logger.info("%s: %s", _named(paths), report.summary())
    if not report.session_pks:
        return not report.failed
    for _, refresh in CATCH_UP:
        try:
            done = refresh(session_ids=report.session_pks)
        except Exception as exc:
            logger.exception("%s stopped by an error: %s", refresh.__name__, exc)
            connections.close_all()
            return False
        _log_new(done.errors, reported, refresh.__name__, forget=False)
    return not report.failed


def _named(paths: list[Path]) -> str:
    """The paths of a pass, for the log: one by its name, more by their number."""
    return str(paths[0]) if len(paths) == 1 else f"{len(paths)} changed paths"


def catch_up(tracker: ImportTracker) -> Iterator[SearchReport | UsageReport]:
    """Bring search, then usage, up to date with the records, telling `tracker`; then end it."""
    for phase, refresh in CATCH_UP:
        yield refresh(progress=functools.partial(tracker.catch_up, phase))
    tracker.end()


def _log_new(
    errors: list[str], reported: set[str] | None, kind: str, *, forget: bool = True
) -> None:
    """Log each error not logged before; forget those of `kind` that went away (`forget`:
    the pass looked at every file, so one it did not meet is gone)."""
    if reported is None:
        for error in errors:
            logger.warning(error)
        return
    now = {f"{kind}: {e}" for e in errors}
    for key in sorted(now - reported):
        logger.warning(key.split(": ", 1)[1])
    if forget:
        reported.difference_update({k for k in reported if k.startswith(f"{kind}: ")} - now)
    reported.update(now)
