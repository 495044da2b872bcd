"""manage.py import_sessions: import every session file under the session roots."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from tqdm import tqdm

from sessions_app.data_folder import PrivateLogFile
from sessions_app.formats import agents
from sessions_app.services.hub.expiring import staged_expire
from sessions_app.services.hub.namespaces import hub_roots
from sessions_app.services.importing import ImportReport, sessions_import
from sessions_app.services.progress import ImportTracker
from sessions_app.services.watching import Rescan, Retry, catch_up, watch_pass, watch_tick
from sessions_app.services.watching import import_pass as _import_pass
from sessions_app.terminal import shown

# The watcher's passes live in services.watching; these names stay here for callers.
__all__ = ["Command", "Rescan", "Retry", "_import_pass", "catch_up", "watch_pass", "watch_tick"]

logger = logging.getLogger("branchboard.importer")
ROOT_POLL = 2.0  # seconds between looks for a root that does not exist yet


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


# Every agent of the registry, so a new one is named here by its line there.
AGENTS = _listed([a.label for a in agents()])
DEFAULT_ROOTS = _listed([f"~/{a.home_folder}/{f}" for a in agents() for f in a.root_folders])


class Command(BaseCommand):
    help = f"Import {AGENTS} sessions (incremental: unchanged files are skipped)."
    # Django's system checks load every URL, view and template tag first (a third of a
    # second, more than an import of a day's sessions); `make run` and `check` run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--root",
            action="append",
            type=Path,
            dest="roots",
            help=f"A session root (repeatable). Default: BRANCHBOARD_ROOTS, else {DEFAULT_ROOTS}.",
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
            # On a team hub: the files machines pushed, each namespace's folders.
            roots += hub_roots()
        # On a team hub: pushes never committed are let go (each run, and every rescan).
        self._expire_staged()
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
                self.stderr.write(shown(error))
            if done.sessions or done.errors or getattr(done, "words", 0):
                self.stdout.write(shown(done.summary()))
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
            self.stdout.write(shown(f"database {name}: applied {len(plan)} migrations"))

    def _expire_staged(self) -> None:
        for path in staged_expire():
            logger.info("removed %s: a push never committed", path)
        self._expired_at = time.monotonic()

    def _report(self, report: ImportReport) -> None:
        # Paths under the roots are anyone's file names: escaped (sessions_app.terminal).
        for error in [*report.errors, *report.left_out]:
            self.stderr.write(shown(error))
        self.stdout.write(shown(report.summary()))

    def _watch(self, roots: list[Path]) -> None:

        log = _log_to_file(Path(settings.IMPORT_LOG))
        self.stdout.write(
            shown(f"branchboard: importer watching {', '.join(map(str, roots))}; log: {log}")
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
        """Import as the roots in `existing` change; True when another root appeared
        (or the watch broke): every file is looked at again when watching starts again."""
        from watchfiles import watch
        from watchfiles._rust_notify import WatchfilesRustInternalError

        retry = Retry()
        rescan = Rescan(every=float(settings.RESCAN_SECONDS))
        # Files are only appended to while a CLI runs; a debounce of a second turns
        # a burst of writes into one incremental import. The one-second timeout
        # wakes the loop for a retry or a rescan when nothing changes, and to look
        # for new roots. No filter: the import's own rules say what is a session file.
        ticks = watch(
            *existing,
            watch_filter=None,
            debounce=1000,
            rust_timeout=1000,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        try:
            for changes in ticks:
                if [str(r) for r in roots if r.is_dir()] != existing:
                    return True  # a root appeared or went: watch again what is there
                watch_tick(roots, {path for _change, path in changes}, reported, retry, rescan)
                if time.monotonic() - self._expired_at >= rescan.every:
                    self._expire_staged()
        except WatchfilesRustInternalError as exc:
            # A folder that could not be watched (too many watches, say): events were lost.
            logger.warning("watching stopped (%s); watching again, every file looked at", exc)
            time.sleep(ROOT_POLL)
            return True
        return False


class _Escaped(logging.Formatter):
    """The message with its control characters escaped (a path under the roots is anyone's
    file name); a traceback after it stays as Python wrote it."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return shown(super().formatMessage(record))


class _OneLine(_Escaped):
    """For the terminal: the message without its traceback (that goes to the log file)."""

    def format(self, record: logging.LogRecord) -> str:
        bare = {**record.__dict__, "exc_info": None, "exc_text": None, "stack_info": None}
        return super().format(logging.makeLogRecord(bare))


def _log_to_file(path: Path) -> Path:
    """Send the importer's log to `path` (rotated), and its warnings to stderr too."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    to_file = PrivateLogFile(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
    to_file.setFormatter(_Escaped("%(asctime)s %(levelname)s %(message)s"))
    to_terminal = logging.StreamHandler(sys.stderr)
    to_terminal.setLevel(logging.WARNING)
    to_terminal.setFormatter(_OneLine("branchboard importer: %(levelname)s: %(message)s"))
    logger.handlers[:] = [to_file, to_terminal]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return path
