"""manage.py fork_session: branch a session, or fork it from a turn."""

from __future__ import annotations

from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandParser

from sessions_app.management.refusing import JSON_HELP, refuse
from sessions_app.resume import NO_COMMAND
from sessions_app.terminal import shown


class Command(BaseCommand):
    help = (
        "Branch a whole session, or fork it from turn N (--before keeps turns 1..N-1 and "
        "prints prompt N to edit; --turn 1 --before makes no session and prints prompt 1 "
        "with the command that starts a new session in the same folder). SESSION is a "
        "session id or the path of its session file (imported first). Exit codes: 2 bad "
        "request, 3 unknown session, 4 conflict; errors go to stderr, or with --json to "
        "stdout as one JSON object."
    )
    # Django's system checks load every URL, view and template tag first (0.13-0.2 s of a
    # command that should answer at once); `make run` and `check` run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="session id, or the path of its session file")
        parser.add_argument("--turn", help="fork at this turn (default: whole session)")
        parser.add_argument("--before", action="store_true", help="keep only the turns before N")
        parser.add_argument("--title", help="title of the new session")
        parser.add_argument(
            "--leaf",
            metavar="UUID",
            help="bring back the branch an in-CLI rewind left that ends at this record "
            "(`turn_list`/the transcript names it) as a session of its own",
        )
        parser.add_argument(
            "--worktree",
            nargs="?",
            const="",
            metavar="SLUG",
            help="go on in a new git worktree of the session's repository, "
            "<top>/.claude/worktrees/SLUG (.qwen/ for Qwen Code) on branch worktree-SLUG; "
            "a name is made up when SLUG is left out",
        )
        parser.add_argument(
            "--leave-changes",
            action="store_true",
            help="with --worktree: go on although the source's working tree has uncommitted "
            "changes (they are not in the new worktree)",
        )
        parser.add_argument(
            "--with-files",
            action="store_true",
            help="with --worktree: put the files Claude Code edited back as they were at the "
            "turn, from its file backups, and list which were restored and which had none",
        )
        parser.add_argument("--json", action="store_true", help=JSON_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        # The services are loaded here, not with the module: `--help` needs none of them.
        from sessions_app.selectors import session_summary, turn_prompt_text
        from sessions_app.services.audit import actor_of_command
        from sessions_app.services.branching import BranchError
        from sessions_app.services.branching.inputs import fork_input
        from sessions_app.services.lookup import session_resolve
        from sessions_app.services.worktrees import fork_where_asked

        try:
            asked = fork_input(
                turn=options["turn"],
                include_turn=not options["before"],
                title=options["title"],
                leaf=options["leaf"],
            )
            source = session_resolve(ref=options["session"])
            if asked.fresh_start:
                self._fresh_start(source, as_json=options["json"])
                return
            forked = fork_where_asked(
                session=source,
                asked=asked,
                worktree=options["worktree"],
                leave_changes=options["leave_changes"],
                with_files=options["with_files"],
            )
        except BranchError as exc:
            refuse(self, exc, as_json=options["json"])
        new, plan = forked.session, forked.plan
        forked.audit(actor_of_command(), source=source, turn=asked.turn)
        info = session_summary(new)
        if plan is not None:
            info["worktree"] = forked.worktree_json()
        turn, before = asked.turn, not asked.include_turn
        if before and turn is not None:
            info["prompt"] = turn_prompt_text(source, turn)
        if options["json"]:
            self.stdout.write(orjson.dumps(info).decode())
            return
        # The title, paths and prompt are the session's text: escaped (sessions_app.terminal).
        self.stdout.write(shown(f"new session {info['session_id']}: {info['title']}"))
        self.stdout.write(shown(f"file:   {info['path']}"))
        if plan is not None:
            said = f"worktree: {plan.path} (branch {plan.branch}, from {plan.base})"
            self.stdout.write(shown(said))
        if forked.restored is not None:
            self.stdout.write(shown(forked.restored.describe(limit=None)))
        self.stdout.write(shown(f"resume: {info['resume_command'] or NO_COMMAND}"))
        if before:
            prompt = shown(info["prompt"], lines=True)
            self.stdout.write(f"\nprompt of turn {turn}, to edit and send:\n{prompt}")

    def _fresh_start(self, source: Any, *, as_json: bool) -> None:
        from sessions_app.services.fresh_start import fresh_start

        start = fresh_start(session=source)
        if as_json:
            info = {"session_id": None, "turn": start.turn, "prompt": start.prompt}
            self.stdout.write(orjson.dumps({**info, "command": start.command}).decode())
            return
        self.stdout.write("nothing comes before turn 1, so no session was made.")
        self.stdout.write(shown(f"start:  {start.command}"))
        prompt = shown(start.prompt, lines=True)
        self.stdout.write(f"\nprompt of turn 1, to edit and send there:\n{prompt}")
