"""manage.py push_sessions: send this machine's sessions to its team hub (new bytes only)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.formats.documents import SESSION_SUFFIXES
from sessions_app.management.commands.pull_sessions import database_ready
from sessions_app.services.hub.choosing import PushReport
from sessions_app.services.hub.client import Hub, HubError, login_load
from sessions_app.services.hub.pulling import pull, pull_plan
from sessions_app.services.hub.pushing import push
from sessions_app.terminal import shown, shown_list

# --watch: a full pass this often (seconds), besides the files that changed, and a pull.
FULL_PASS = 600.0
PULL_EVERY = 30.0


class Command(BaseCommand):
    help = (
        "Push the session files under this machine's roots to the hub hub_login named: new "
        "files whole, grown ones by their new bytes. Only projects BRANCHBOARD_HUB_PROJECTS "
        "lets go (minus BRANCHBOARD_HUB_EXCLUDE). --watch pushes shortly after a file "
        "changes, and pulls the forks made for this machine on the hub."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hub", help="the hub's address (default: the one logged in to)")
        parser.add_argument("--watch", action="store_true", help="keep pushing as files change")
        parser.add_argument(
            "--dry-run", action="store_true", help="list what would go, send nothing"
        )

    def handle(self, *args: Any, hub: str | None, watch: bool, dry_run: bool, **o: Any) -> None:
        self.verbosity = int(o.get("verbosity", 1))
        self._noted = set()
        if not settings.HUB_PROJECTS:
            raise CommandError(
                "no project may go yet: set BRANCHBOARD_HUB_PROJECTS to the project folders "
                "(or shell patterns, ':'-separated) whose sessions go to the hub, '*' for all"
            )
        if not dry_run:
            database_ready(self.stdout)  # a pull (--watch) and the push's notes need tables
        try:
            remote = Hub(login_load(hub))
            self._pass(remote, dry_run=dry_run)
        except HubError as exc:
            raise CommandError(shown(exc)) from None
        if watch and not dry_run:
            self._watch(remote)

    def _pass(self, hub: Hub, *, dry_run: bool, only: list[Path] | None = None) -> PushReport:
        report = push(hub, dry_run=dry_run, only=only, said=self._said)
        # Every list printed is capped (then "… and N more"): a hub's answers fill them.
        for line in shown_list([f"{path} ({what})" for what, path in report.planned]):
            self.stdout.write(f"would push: {line}")
        if dry_run or self.verbosity > 1:
            for line in shown_list(report.left_out):
                self.stdout.write(f"left out: {line}")
        for line in shown_list(report.problems):
            self.stderr.write(f"not pushed: {line}")
        notes = [n for n in dict.fromkeys(report.notes) if n not in self._noted]
        self._noted.update(notes)  # said once, not at every pass of --watch
        for line in shown_list(notes):
            self.stdout.write(f"note: {line}")
        if only is None:
            sent = len(report.sent_files)
            summary = (
                f"{'would push' if dry_run else 'pushed'} "
                f"{len(report.planned) if dry_run else sent} file{'s' * (sent != 1)} "
                f"to {hub.login.url} as {hub.login.namespace}: {report.bytes_sent:,} bytes "
                f"({report.wire_bytes:,} on the wire); {report.up_to_date} up to date; "
                f"{len(report.left_out)} left out by BRANCHBOARD_HUB_PROJECTS/EXCLUDE"
                f"{'' if dry_run or not report.left_out else ' (--dry-run lists them)'}"
            )
            self.stdout.write(shown(summary))
        return report

    verbosity = 1
    _noted: set[object]

    def _said(self, line: str) -> None:
        if self.verbosity > 1:
            self.stdout.write(shown(line))

    def _pull(self, hub: Hub) -> None:
        """The forks made for this machine on the hub, within a pull's bounds; what stays
        on the hub, and each problem, said once, not every 30 s."""
        plan = pull_plan(hub)
        if plan.take:
            for line in shown_list([f"{p.target} ({p.size:,} bytes)" for p in plan.take]):
                self.stdout.write(f"will pull: {line}")
        pulled = pull(hub, plan)
        for line in shown_list(pulled.written):
            self.stdout.write(f"pulled: {line}")
        for kind, said in (("held on the hub", plan.held), ("next pull", plan.later)):
            new = [f"{p}: {why}" for p, why in said if (kind, p, why) not in self._noted]
            self._noted.update((kind, p, why) for p, why in said)
            for line in shown_list(new):
                self.stdout.write(f"{kind}: {line}")
        problems = [p for p in pulled.problems if p not in self._noted]
        self._noted.update(problems)
        for line in shown_list(problems):
            self.stderr.write(f"not pulled: {line}")

    def _watch(self, hub: Hub) -> None:
        from watchfiles import watch

        roots = [str(r) for r in settings.SESSION_ROOTS if Path(r).exists()]
        if not roots:
            raise CommandError("none of the session roots exists; nothing to watch")
        self.stdout.write(shown(f"watching {', '.join(roots)}; Ctrl-C stops"))
        full_at = time.monotonic()
        pulled_at = full_at - PULL_EVERY  # the first pull at the first tick, not 30 s on
        for changes in watch(
            *roots, debounce=300, step=100, rust_timeout=5000, yield_on_timeout=True
        ):
            try:
                paths = [Path(p) for _, p in changes if p.endswith(SESSION_SUFFIXES)]
                if paths:
                    self._pass(hub, dry_run=False, only=paths)
                now = time.monotonic()
                if now - full_at > FULL_PASS:
                    self._pass(hub, dry_run=False)
                    full_at = now
                if now - pulled_at > PULL_EVERY:
                    self._pull(hub)
                    pulled_at = now
            except HubError as exc:
                # The hub is away (a restart, the network): the next change or pass retries.
                self.stderr.write(f"push: {shown(exc)}; retrying at the next change")
