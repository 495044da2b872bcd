"""manage.py pull_sessions: write the forks made for this machine on the hub where its CLIs look."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app.services.hub.client import Hub, HubError, login_load
from sessions_app.services.hub.pulling import pull
from sessions_app.terminal import shown


def database_ready(stdout: OutputWrapper) -> None:
    """A fresh data folder has no tables yet: create them, as `import_sessions` does."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        call_command("migrate", interactive=False, verbosity=0)
        name = connection.settings_dict["NAME"]
        stdout.write(shown(f"database {name}: applied {len(plan)} migrations"))


class Command(BaseCommand):
    help = (
        "Take the sessions made for this machine on the hub (branches and forks of its "
        "sessions) and write each, new files only and checked, where its CLI looks, so "
        "`claude --resume <id>` goes on with it here. Exit 1 if one could not be written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hub", help="the hub's address (default: the one logged in to)")

    def handle(self, *args: Any, hub: str | None, **options: Any) -> None:
        database_ready(self.stdout)
        try:
            report = pull(Hub(login_load(hub)))
        except HubError as exc:
            raise CommandError(shown(exc)) from None
        for path in report.written:
            self.stdout.write(f"pulled: {shown(path)}")
        for problem in report.problems:
            self.stderr.write(f"not pulled: {shown(problem)}")
        self.stdout.write(
            f"{len(report.written)} pulled, {report.present} already here, "
            f"{len(report.problems)} not pulled"
        )
        if report.problems:
            raise CommandError("some sessions could not be pulled (see above)")
