"""manage.py pull_sessions: write the forks made for this machine on the hub where its CLIs look."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app.services.hub.client import Hub, HubError, login_load
from sessions_app.services.hub.pulling import PullPlan, pull, pull_plan
from sessions_app.terminal import shown, shown_list


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
        "Take the sessions made for this machine on the hub (your own branches and forks "
        "of its sessions, and the teammates' ones you accepted) and write each, new files "
        "only and checked, where its CLI looks, so `claude --resume <id>` goes on with it "
        "here. Lists what it will write, and what stays on the hub and why, before writing; "
        "at most BRANCHBOARD_PULL_MAX_FILES files and BRANCHBOARD_PULL_MAX_BYTES bytes a "
        "pull. Exit 1 if one could not be written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hub", help="the hub's address (default: the one logged in to)")
        parser.add_argument(
            "--dry-run", action="store_true", help="list what would be written, write nothing"
        )
        parser.add_argument(
            "--accept",
            action="append",
            default=[],
            metavar="SESSION_ID",
            help="let a teammate's fork of your session (its id on the hub) come to this "
            "machine; may be given more than once",
        )

    def handle(
        self, *args: Any, hub: str | None, dry_run: bool, accept: list[str], **options: Any
    ) -> None:
        if dry_run and accept:
            raise CommandError("--accept tells the hub; it is not done in a --dry-run")
        database_ready(self.stdout)
        try:
            remote = Hub(login_load(hub))
            plan = pull_plan(remote, accept=accept)
            plan_show(self, plan, dry_run=dry_run)
            if dry_run:
                return
            report = pull(remote, plan)
        except HubError as exc:
            raise CommandError(shown(exc)) from None
        for line in shown_list(report.written):
            self.stdout.write(f"pulled: {line}")
        for line in shown_list(report.problems):
            self.stderr.write(f"not pulled: {line}")
        self.stdout.write(
            f"{len(report.written)} pulled, {report.present} already here, "
            f"{len(report.problems)} not pulled, {len(plan.held)} held on the hub, "
            f"{len(plan.later)} left for the next pull"
        )
        if report.problems:
            raise CommandError("some sessions could not be pulled (see above)")


def plan_show(command: BaseCommand, plan: PullPlan, *, dry_run: bool) -> None:
    """What the pull will write, and what it will not and why: before it writes."""
    out = command.stdout
    for session_id in shown_list(plan.accepted):
        out.write(f"accepted: {session_id} (it comes with this pull)")
    verb = "would pull" if dry_run else "will pull"
    for line in shown_list(
        [f"{p.target} ({p.size:,} bytes, made by {p.made_by or 'you'})" for p in plan.take]
    ):
        out.write(f"{verb}: {line}")
    for line in shown_list([f"{path}: {why}" for path, why in plan.held]):
        out.write(f"held on the hub: {line}")
    for line in shown_list([f"{path}: {why}".lstrip(": ") for path, why in plan.later]):
        out.write(f"next pull: {line}")
    if dry_run:
        for line in shown_list(plan.problems):
            command.stderr.write(f"would not pull: {line}")
        out.write(
            f"would pull {len(plan.take)} file{'s' * (len(plan.take) != 1)}, "
            f"{plan.bytes:,} bytes; nothing written"
        )
