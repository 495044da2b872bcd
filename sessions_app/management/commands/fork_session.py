"""manage.py fork_session: branch a session, or fork it from a turn."""

from __future__ import annotations

from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.selectors import session_summary, turn_prompt_text
from sessions_app.services.branching import BranchError, session_fork
from sessions_app.services.lookup import session_resolve

EXIT_CODES = {400: 2, 404: 3, 409: 4}


class Command(BaseCommand):
    help = (
        "Branch a whole session, or fork it from turn N (--before keeps turns 1..N-1). "
        "SESSION is a session id or the path of a .jsonl session file (imported first)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="session id, or path to a .jsonl session file")
        parser.add_argument("--turn", type=int, help="fork at this turn (default: whole session)")
        parser.add_argument("--before", action="store_true", help="keep only the turns before N")
        parser.add_argument("--title", help="title of the new session")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        turn, before = options["turn"], options["before"]
        if before and turn is None:
            raise CommandError("--before needs --turn N", returncode=2)
        try:
            source = session_resolve(ref=options["session"])
            new = session_fork(
                session=source, turn=turn, include_turn=not before, title=options["title"]
            )
        except BranchError as exc:
            raise CommandError(str(exc), returncode=EXIT_CODES.get(exc.status, 1)) from None
        info = session_summary(new)
        if before:
            info["prompt"] = turn_prompt_text(source, turn)
        if options["json"]:
            self.stdout.write(orjson.dumps(info).decode())
            return
        self.stdout.write(f"new session {info['session_id']}: {info['title']}")
        self.stdout.write(f"file:   {info['path']}")
        self.stdout.write(f"resume: {info['resume_command']}")
        if before:
            self.stdout.write(f"\nprompt of turn {turn}, to edit and send:\n{info['prompt']}")
