"""manage.py import_sessions: import every session file under the session roots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from sessions_app.services.importing import ImportReport, sessions_import


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
            help="After the import, keep watching the roots and import what changes.",
        )

    def handle(self, *args: Any, roots: list[Path] | None, **options: Any) -> None:
        if roots is None:
            # The defaults are optional: a machine may have only one of the CLIs.
            roots = [r for r in settings.SESSION_ROOTS if r.exists()] or list(
                settings.SESSION_ROOTS
            )
        show = not options["no_progress"] and sys.stderr.isatty()
        self._report(self._import(roots, show))
        if options["watch"]:
            self._watch(roots)

    def _import(self, roots: list[Path], show: bool) -> ImportReport:
        with tqdm(
            unit="B", unit_scale=True, desc="importing", disable=not show, leave=False
        ) as bar:
            return sessions_import(roots=roots, progress=lambda _f, size: bar.update(size))

    def _report(self, report: ImportReport) -> None:
        for error in report.errors:
            self.stderr.write(error)
        self.stdout.write(report.summary())

    def _watch(self, roots: list[Path]) -> None:
        from watchfiles import watch

        existing = [str(r) for r in roots if r.is_dir()]
        if not existing:
            self.stderr.write("nothing to watch: none of the roots exists")
            return
        self.stdout.write(f"watching {', '.join(existing)} (Ctrl-C stops)")
        # Files are only appended to while a CLI runs; a debounce of a second
        # turns a burst of writes into one incremental import.
        for _changes in watch(*existing, debounce=1000, rust_timeout=0, raise_interrupt=False):
            report = self._import(roots, show=False)
            if report.sessions or report.errors:
                self._report(report)
