"""manage.py dashboard_url: the local dashboard's one-click link, which carries the owner token."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.middleware import TOKEN_QUERY
from sessions_app.services.owner_token import OwnerTokenError, owner_token


class Command(BaseCommand):
    help = (
        "Print the link that opens the local dashboard as its owner (make run prints it too); "
        "--token prints the token alone, for scripts' Authorization: Bearer."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000, help="the port it is served on")
        parser.add_argument("--token", action="store_true", help="print the token alone")

    def handle(self, *args: Any, port: int, token: bool, **options: Any) -> None:
        if settings.TEAM_MODE:
            raise CommandError("team mode: the dashboard has logins, not an owner token")
        try:
            key = owner_token(folder=settings.DATA_DIR)
        except OwnerTokenError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(key if token else f"http://127.0.0.1:{port}/?{TOKEN_QUERY}={key}")
