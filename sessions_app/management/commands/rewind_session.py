"""manage.py rewind_session: rewind a session to a turn, or undo the last rewind."""

from __future__ import annotations

from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandParser
from django.template.defaultfilters import pluralize

from sessions_app.management.refusing import JSON_HELP, refuse
from sessions_app.resume import NO_COMMAND
from sessions_app.terminal import shown


class Command(BaseCommand):
    help = (
        "Rewind SESSION so the CLI resumes after turn N-1 (Claude Code: the old file is kept "
        "as a backup session first), or --undo the last rewind. Exit codes: 2 bad request, "
        "3 unknown session, 4 conflict; errors go to stderr, or with --json to stdout as one "
        "JSON object."
    )
    # Django's system checks load every URL, view and template tag first (0.13-0.2 s of a
    # command that should answer at once); `make run` and `check` run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="session id, or the path of its session file")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--turn", help="rewind to this turn (it leaves the session)")
        group.add_argument("--undo", action="store_true", help="undo the last rewind")
        parser.add_argument("--json", action="store_true", help=JSON_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        # The services are loaded here, not with the module: `--help` needs none of them.
        from sessions_app.selectors import session_summary
        from sessions_app.services.audit import actor_of_command, audit_record
        from sessions_app.services.branching import (
            BranchError,
            session_rewind,
            session_rewind_undo,
        )
        from sessions_app.services.branching.inputs import rewind_input
        from sessions_app.services.lookup import session_resolve

        try:
            turn = None if options["undo"] else rewind_input(turn=options["turn"])
            session = session_resolve(ref=options["session"])
            if turn is None:
                session = session_rewind_undo(session=session)
            else:
                session = session_rewind(session=session, turn=turn)
        except BranchError as exc:
            refuse(self, exc, as_json=options["json"])
        action = "rewind_undo" if options["undo"] else "rewind"
        audit_record(
            actor=actor_of_command(), action=action, session=session, result=None, turn=turn
        )
        info = session_summary(session)
        # `turn`: the turn rewound to, or after an undo the turn count restored.
        info["turn"] = session.turn_count if options["undo"] else turn
        backup = (session.rewind_undo or {}).get("backup_id")
        info["backup_id"] = backup
        if options["json"]:
            self.stdout.write(orjson.dumps(info).decode())
            return
        done = "restored" if options["undo"] else f"rewound to turn {turn}"
        turns = info["turns"]
        self.stdout.write(
            f"session {info['session_id']} {done}: {turns} turn{pluralize(turns)} now"
        )
        if backup:
            self.stdout.write(f"backup: session {backup} keeps the old history")
        resume = info["resume_command"] or NO_COMMAND
        self.stdout.write(shown(f"resume: {resume}"))  # the cwd: escaped
