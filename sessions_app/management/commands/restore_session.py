"""manage.py restore_session: write a session whose file was removed back from the archive."""

from __future__ import annotations

from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandParser

from sessions_app.management.refusing import JSON_HELP, refuse
from sessions_app.resume import NO_COMMAND
from sessions_app.selectors import session_summary
from sessions_app.services.archive.restoring import session_restore
from sessions_app.services.audit import actor_of_command, audit_record
from sessions_app.services.branching import BranchError
from sessions_app.services.lookup import session_resolve
from sessions_app.terminal import shown


class Command(BaseCommand):
    help = (
        "Restore SESSION's file, its subagent files, the files of its folder and its file "
        "backups byte for byte from branchboard's archive where its CLI looks; refused if its "
        "file is there; each file that cannot come back is named (not_restored). Exit codes: "
        "2 bad request, 3 unknown session, 4 conflict."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="session id")
        parser.add_argument("--json", action="store_true", help=JSON_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            session = session_resolve(ref=options["session"])
            written = session_restore(session=session)
        except BranchError as exc:
            refuse(self, exc, as_json=options["json"])
        audit_record(
            actor=actor_of_command(), action="restore", session=session, result=None, turn=None
        )
        info = session_summary(session)
        info["restored"] = [str(p) for p in written]
        info["not_restored"] = written.problems
        if options["json"]:
            self.stdout.write(orjson.dumps(info).decode())
            return
        # Paths and the cwd are the session's text: escaped (sessions_app.terminal).
        for path in written:
            self.stdout.write(shown(f"restored: {path}"))
        for problem in written.problems:
            self.stderr.write(shown(f"not restored: {problem}"))
        self.stdout.write(shown(f"resume: {info['resume_command'] or NO_COMMAND}"))
