"""manage.py worktree_remove: remove an agent worktree without losing changes or commits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandParser

from sessions_app.management.refusing import JSON_HELP, refuse
from sessions_app.services.audit import actor_of_command, audit_record
from sessions_app.services.branching import BranchError
from sessions_app.services.worktrees import worktree_remove


class Command(BaseCommand):
    help = (
        "Remove a git worktree under <repository>/.claude/worktrees/ or .qwen/worktrees/. "
        "Refused while it has uncommitted, untracked or conflicted changes unless --discard; "
        "its branch is deleted with `git branch -d` only, so a branch with commits that no "
        "other branch or remote holds is kept. Exit codes: 2 bad request, 4 conflict."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the worktree's folder")
        parser.add_argument(
            "--discard", action="store_true", help="throw its uncommitted changes away"
        )
        parser.add_argument(
            "--live-ok",
            action="store_true",
            help="remove it although the session it belongs to was written in the last minute",
        )
        parser.add_argument("--json", action="store_true", help=JSON_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            removal = worktree_remove(
                Path(options["path"]), discard=options["discard"], live_ok=options["live_ok"]
            )
        except BranchError as exc:
            refuse(self, exc, as_json=options["json"])
        audit_record(
            actor=actor_of_command(),
            action="worktree_remove",
            session=None,
            result=None,
            turn=None,
            detail=removal.describe(),
        )
        if options["json"]:
            body = {
                "path": str(removal.path),
                "branch": removal.branch,
                "branch_deleted": removal.branch_deleted,
                "unique_commits": removal.unique_commits,
            }
            self.stdout.write(orjson.dumps(body).decode())
            return
        self.stdout.write(removal.describe())
