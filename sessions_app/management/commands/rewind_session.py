"""manage.py rewind_session: rewind a session to a turn, or undo the last rewind."""

from __future__ import annotations

from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.selectors import session_summary
from sessions_app.services.branching import BranchError, session_rewind, session_rewind_undo
from sessions_app.services.lookup import session_resolve

from .fork_session import EXIT_CODES


class Command(BaseCommand):
    help = (
        "Rewind SESSION so the CLI resumes after turn N-1 (Claude Code: the old file is kept "
        "as a backup session first), or --undo the last rewind."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="session id, or path to a .jsonl session file")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--turn", type=int, help="rewind to this turn (it leaves the session)")
        group.add_argument("--undo", action="store_true", help="undo the last rewind")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            session = session_resolve(ref=options["session"])
            if options["undo"]:
                session = session_rewind_undo(session=session)
            else:
                session = session_rewind(session=session, turn=options["turn"])
        except BranchError as exc:
            raise CommandError(str(exc), returncode=EXIT_CODES.get(exc.status, 1)) from None
        info = session_summary(session)
        backup = (session.rewind_undo or {}).get("backup_id")
        info["backup_id"] = backup
        if options["json"]:
            self.stdout.write(orjson.dumps(info).decode())
            return
        done = "restored" if options["undo"] else f"rewound to turn {options['turn']}"
        self.stdout.write(f"session {info['session_id']} {done}: {info['turns']} turn(s) now")
        if backup:
            self.stdout.write(f"backup: session {backup} keeps the old history")
        self.stdout.write(f"resume: {info['resume_command']}")
