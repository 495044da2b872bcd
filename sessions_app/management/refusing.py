"""How the management commands end on a refusal: the edge table's exit code, text or JSON."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

import orjson
from django.core.management.base import BaseCommand, CommandError

from sessions_app.terminal import shown

if TYPE_CHECKING:
    from sessions_app.services.branching import BranchError

JSON_HELP = (
    "print one JSON object on stdout, also when refused: "
    '{"error": <message>, "status": <400|404|409>}, with the same exit code'
)


def refuse(command: BaseCommand, error: BranchError, *, as_json: bool) -> NoReturn:
    """End the command on a refusal: exit 2, 3 or 4 by its status, as JSON with --json."""
    # Here, not at the top: a command's `--help` loads no service.
    from sessions_app.refusals import exit_code_of, status_of

    code = exit_code_of(error)
    if as_json:
        body = {"error": str(error), "status": status_of(error)}
        command.stdout.write(orjson.dumps(body).decode())
        if getattr(command, "_called_from_command_line", False):
            # The JSON object is the whole answer; CommandError would add a plain-text line.
            sys.exit(code)
    # The message may quote a title, a path or what was typed: escaped for the terminal.
    raise CommandError(shown(error), returncode=code)
