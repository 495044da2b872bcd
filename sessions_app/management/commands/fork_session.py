"""manage.py fork_session: branch a session, or fork it from a turn."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.selectors import session_summary, turn_prompt_text
from sessions_app.services.branching import BranchError, session_fork
from sessions_app.services.fresh_start import fresh_start
from sessions_app.services.lookup import session_resolve

EXIT_CODES = {400: 2, 404: 3, 409: 4}
JSON_HELP = (
    "print one JSON object on stdout, also when refused: "
    '{"error": <message>, "status": <400|404|409>}, with the same exit code'
)


def whole_number(value: str) -> int:
    """--turn as the pages and the API read it."""
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"turn must be a whole number, not {value!r}") from None


def refuse(command: BaseCommand, error: BranchError, *, as_json: bool) -> NoReturn:
    """End the command on a refusal: exit 2, 3 or 4 by its status, as JSON with --json."""
    code = EXIT_CODES.get(error.status, 1)
    if as_json:
        command.stdout.write(orjson.dumps({"error": str(error), "status": error.status}).decode())
        if command._called_from_command_line:
            # The JSON object is the whole answer; CommandError would add a plain-text line.
            sys.exit(code)
    raise CommandError(str(error), returncode=code)


class Command(BaseCommand):
    help = (
        "Branch a whole session, or fork it from turn N (--before keeps turns 1..N-1 and "
        "prints prompt N to edit; --turn 1 --before makes no session and prints prompt 1 "
        "with the command that starts a new session in the same folder). SESSION is a "
        "session id or the path of a .jsonl session file (imported first). Exit codes: 2 bad "
        "request, 3 unknown session, 4 conflict; errors go to stderr, or with --json to "
        "stdout as one JSON object."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="session id, or path to a .jsonl session file")
        parser.add_argument(
            "--turn", type=whole_number, help="fork at this turn (default: whole session)"
        )
        parser.add_argument("--before", action="store_true", help="keep only the turns before N")
        parser.add_argument("--title", help="title of the new session")
        parser.add_argument("--json", action="store_true", help=JSON_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        turn, before = options["turn"], options["before"]
        try:
            if before and turn is None:
                raise BranchError("--before needs --turn N")
            source = session_resolve(ref=options["session"])
            if before and turn == 1:
                self._fresh_start(source, as_json=options["json"])
                return
            new = session_fork(
                session=source, turn=turn, include_turn=not before, title=options["title"]
            )
        except BranchError as exc:
            refuse(self, exc, as_json=options["json"])
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

    def _fresh_start(self, source: Any, *, as_json: bool) -> None:
        start = fresh_start(session=source)
        if as_json:
            info = {"session_id": None, "turn": start.turn, "prompt": start.prompt}
            self.stdout.write(orjson.dumps({**info, "command": start.command}).decode())
            return
        self.stdout.write("nothing comes before turn 1, so no session was made.")
        self.stdout.write(f"start:  {start.command}")
        self.stdout.write(f"\nprompt of turn 1, to edit and send there:\n{start.prompt}")
