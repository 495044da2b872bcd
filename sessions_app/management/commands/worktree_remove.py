"""manage.py worktree_remove: remove an agent worktree without losing changes or commits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandParser

from sessions_app.management.refusing import JSON_HELP, refuse
from sessions_app.services.audit import actor_of_command, audit_record
from sessions_app.services.branching import BranchError
from sessions_app.services.worktrees import stale_worktrees_remove, worktree_remove
from sessions_app.terminal import shown


class Command(BaseCommand):
    help = (
        "Remove a git worktree under <repository>/.claude/worktrees/ or .qwen/worktrees/. "
        "Refused while it has uncommitted, untracked, conflicted or ignored files (a .env) "
        "unless --discard, and when branchboard did not make it unless --foreign; "
        "its branch is deleted with `git branch -d` only, so a branch with commits that no "
        "other branch or remote holds is kept. Exit codes: 2 bad request, 4 conflict."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path",
            help="the worktree's folder; with --stale, any folder of the repository",
        )
        parser.add_argument(
            "--stale",
            action="store_true",
            help="remove every stale agent worktree (agent- and 7 hex digits, untouched for "
            "30 days, no uncommitted change, no commit of its own) of PATH's repository; "
            "any it cannot vouch for is kept; the CLIs' worktrees are not branchboard's, so "
            "this needs --foreign too",
        )
        parser.add_argument(
            "--discard",
            action="store_true",
            help="throw its uncommitted changes away, ignored files (a .env) included",
        )
        parser.add_argument(
            "--foreign",
            action="store_true",
            help="remove it although branchboard did not make it (no ownership marker): "
            "it is someone else's, a CLI's own agent- worktree or one made by hand",
        )
        parser.add_argument(
            "--live-ok",
            action="store_true",
            help="remove it although the session it belongs to was written in the last minute",
        )
        parser.add_argument("--json", action="store_true", help=JSON_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["stale"]:
            self._stale(Path(options["path"]), foreign=options["foreign"], as_json=options["json"])
            return
        try:
            removal = worktree_remove(
                options["path"],
                discard=options["discard"],
                live_ok=options["live_ok"],
                foreign=options["foreign"],
            )
        except BranchError as exc:
            refuse(self, exc, as_json=options["json"])
        _audit(removal.describe())
        if options["json"]:
            body = {
                "path": str(removal.path),
                "branch": removal.branch,
                "branch_deleted": removal.branch_deleted,
                "unique_commits": removal.unique_commits,
            }
            self.stdout.write(orjson.dumps(body).decode())
            return
        self.stdout.write(shown(removal.describe()))

    def _stale(self, folder: Path, *, foreign: bool, as_json: bool) -> None:
        try:
            done = stale_worktrees_remove(folder, foreign=foreign)
        except BranchError as exc:
            refuse(self, exc, as_json=as_json)
        for _path, said in done:
            if not said.startswith("kept"):
                _audit(said)
        if as_json:
            rows = [{"path": str(path), "outcome": said} for path, said in done]
            self.stdout.write(orjson.dumps(rows).decode())
            return
        for path, said in done:
            self.stdout.write(shown(f"{path}: {said}"))
        if not done:
            self.stdout.write("no CLI agent worktrees (agent- and 7 hex digits) in this repository")


def _audit(detail: str) -> None:
    audit_record(
        actor=actor_of_command(),
        action="worktree_remove",
        session=None,
        result=None,
        turn=None,
        detail=detail,
    )
