"""manage.py import_sessions: import every session file under the session roots."""

from __future__ import annotations

import functools
import logging
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections, connection, connections
from django.db.migrations.executor import MigrationExecutor
from tqdm import tqdm

from sessions_app.data_folder import PrivateLogFile
from sessions_app.models_import import ImportStatus
from sessions_app.services.import_status import ImportTracker
from sessions_app.services.importing import ImportReport, sessions_import
from sessions_app.services.searching import SearchReport, search_refresh
from sessions_app.services.usage import UsageReport, usage_refresh

logger = logging.getLogger("branchboard.importer")
# A failed pass (a database lock held too long, a bad file) is tried again after
# FIRST_DELAY seconds, then twice as long each time, never longer than MAX_DELAY.
FIRST_DELAY, MAX_DELAY = 1.0, 60.0
ROOT_POLL = 2.0  # seconds between looks for a root that does not exist yet


class Command(BaseCommand):
    help = "Import Claude Code and Qwen Code sessions (incremental: unchanged files are skipped)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--root",
            action="append",
            type=Path,
            dest="roots",
            help="A session root (repeatable). Default: BRANCHBOARD_ROOTS, else "
            "~/.claude/projects and ~/.qwen/projects.",
        )
        parser.add_argument("--no-progress", action="store_true", help="Never show a progress bar.")
        parser.add_argument(
            "--watch",
            action="store_true",
            help="Keep watching the roots and import what changes; errors are retried, "
            "and logged to import.log in the data folder.",
        )

    def handle(self, *args: Any, roots: list[Path] | None, **options: Any) -> None:
        self._migrate()
        if roots is None:
            # The defaults are optional: a machine may have only one of the CLIs.
            roots = [r for r in settings.SESSION_ROOTS if r.exists()] or list(
                settings.SESSION_ROOTS
            )
        if options["watch"]:
            self._watch(roots)
            return
        show = not options["no_progress"] and sys.stderr.isatty()
        tracker = ImportTracker()
        started = time.perf_counter()
        with tqdm(
            unit="B", unit_scale=True, desc="importing", disable=not show, leave=False
        ) as bar:
            report = sessions_import(
                roots=roots, progress=lambda _f, size: bar.update(size), tracker=tracker
            )
        self._report(report)
        took = [f"records {time.perf_counter() - started:.1f} s"]
        started = time.perf_counter()
        for name, done in zip(("search", "usage"), catch_up(tracker), strict=True):
            for error in done.errors:
                self.stderr.write(error)
            if done.sessions or done.errors:
                self.stdout.write(done.summary())
            took.append(f"{name} {time.perf_counter() - started:.1f} s")
            started = time.perf_counter()
        if report.sessions or report.subagents:
            # Where a first import's time goes, for the person waiting for it.
            self.stdout.write("took: " + ", ".join(took))

    def _migrate(self) -> None:
        """A fresh data folder has no tables yet: create them, as `make run` does."""
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if plan:
            call_command("migrate", interactive=False, verbosity=0)
            name = connection.settings_dict["NAME"]
            self.stdout.write(f"database {name}: applied {len(plan)} migrations")

    def _report(self, report: ImportReport) -> None:
        for error in [*report.errors, *report.left_out]:
            self.stderr.write(error)
        self.stdout.write(report.summary())

    def _watch(self, roots: list[Path]) -> None:

        log = _log_to_file(Path(settings.IMPORT_LOG))
        self.stdout.write(
            f"branchboard: importer watching {', '.join(map(str, roots))}; log: {log}"
        )
        self.stdout.flush()
        reported: set[str] = set()
        while True:
            existing = [str(r) for r in roots if r.is_dir()]
            if not existing:
                # A CLI not used yet has no folder: wait for one to appear, saying so once.
                if "no roots" not in reported:
                    reported.add("no roots")
                    logger.warning(
                        "none of %s exists yet; waiting for one", ", ".join(map(str, roots))
                    )
                time.sleep(ROOT_POLL)
                continue
            reported.discard("no roots")
            logger.info("watching %s", ", ".join(existing))
            if not self._watch_these(existing, roots, reported):
                return

    def _watch_these(self, existing: list[str], roots: list[Path], reported: set[str]) -> bool:
        """Import as the roots in `existing` change; True when another root appeared."""
        from watchfiles import watch

        retry = Retry()
        # Files are only appended to while a CLI runs; a debounce of a second turns
        # a burst of writes into one incremental import. The one-second timeout
        # wakes the loop for a retry when nothing changes, and to look for new roots.
        ticks = watch(
            *existing,
            debounce=1000,
            rust_timeout=1000,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        for changes in ticks:
            if [str(r) for r in roots if r.is_dir()] != existing:
                return True  # a root appeared or went: watch again what is there
            if not changes and (retry.at is None or time.monotonic() < retry.at):
                continue
            watch_pass(roots, reported, retry)
        return False


@dataclass
class Retry:
    """When the watcher imports again though nothing changed: after a failed pass."""

    delay: float = 0.0
    at: float | None = 0.0  # a monotonic time; the first pass is due at once; None: none due


def watch_pass(roots: list[Path], reported: set[str], retry: Retry) -> None:
    """One pass of the watcher; a failed one is tried again later, each time twice as late."""
    if _import_pass(roots, reported):
        if retry.delay:
            logger.info("import works again")
        retry.delay, retry.at = 0.0, None
    else:
        retry.delay = min(max(retry.delay * 2, FIRST_DELAY), MAX_DELAY)
        retry.at = time.monotonic() + retry.delay
        logger.warning("import pass failed; trying again in %.0f s", retry.delay)


def _import_pass(roots: list[Path], reported: set[str] | None = None) -> bool:
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
    refreshes: list[tuple[str, Callable[..., SearchReport | UsageReport]]] = [
        (ImportStatus.SEARCH, search_refresh),
        (ImportStatus.USAGE, usage_refresh),
    ]
    for phase, refresh in refreshes:
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
    return not report.errors


def catch_up(tracker: ImportTracker) -> Iterator[SearchReport | UsageReport]:
    """Bring search, then usage, up to date with the records, telling `tracker`; then end it."""
    yield search_refresh(progress=lambda n, total: tracker.catch_up(ImportStatus.SEARCH, n, total))
    yield usage_refresh(progress=lambda n, total: tracker.catch_up(ImportStatus.USAGE, n, total))
    tracker.end()


def _log_new(errors: list[str], reported: set[str] | None, kind: str) -> None:
    """Log each error not logged before; forget those of `kind` that went away."""
    if reported is None:
        for error in errors:
            logger.warning(error)
        return
    now = {f"{kind}: {e}" for e in errors}
    for key in sorted(now - reported):
        logger.warning(key.split(": ", 1)[1])
    reported.difference_update({k for k in reported if k.startswith(f"{kind}: ")} - now)
    reported.update(now)


class _OneLine(logging.Formatter):
    """For the terminal: the message without its traceback (that goes to the log file)."""

    def format(self, record: logging.LogRecord) -> str:
        bare = {**record.__dict__, "exc_info": None, "exc_text": None, "stack_info": None}
        return super().format(logging.makeLogRecord(bare))


def _log_to_file(path: Path) -> Path:
    """Send the importer's log to `path` (rotated), and its warnings to stderr too."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    to_file = PrivateLogFile(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
    to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    to_terminal = logging.StreamHandler(sys.stderr)
    to_terminal.setLevel(logging.WARNING)
    to_terminal.setFormatter(_OneLine("branchboard importer: %(levelname)s: %(message)s"))
    logger.handlers[:] = [to_file, to_terminal]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return path
