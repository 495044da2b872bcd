"""manage.py import_sessions: import every session file under the session roots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from sessions_app.services.importing import sessions_import


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

    def handle(
        self, *args: Any, roots: list[Path] | None, no_progress: bool, **options: Any
    ) -> None:
        if roots is None:
            # The defaults are optional: a machine may have only one of the CLIs.
            roots = [r for r in settings.SESSION_ROOTS if r.exists()] or list(
                settings.SESSION_ROOTS
            )
        show = not no_progress and sys.stderr.isatty()
        bar = tqdm(unit="B", unit_scale=True, desc="importing", disable=not show, leave=False)
        report = sessions_import(roots=roots, progress=lambda _f, size: bar.update(size))
        bar.close()
        for error in report.errors:
            self.stderr.write(error)
        self.stdout.write(report.summary())
