"""manage.py create_api_token: print a new bearer token for the JSON API."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.models import ApiToken
from sessions_app.terminal import shown


class Command(BaseCommand):
    help = "Create an API token and print it once (team mode: for --user)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", default="cli", help="a name to recognise the token by")
        parser.add_argument("--user", help="the user the token acts as (required in team mode)")

    def handle(self, *args: Any, name: str, user: str | None, **options: Any) -> None:
        owner = None
        if user:
            owner = get_user_model().objects.filter(username=user).first()
            if owner is None:
                raise CommandError(
                    shown(f"no user {user!r}; create one with manage.py createsuperuser")
                )
        elif settings.TEAM_MODE:
            raise CommandError("team mode: say which user the token acts as with --user")
        _, key = ApiToken.issue(name=name, user=owner)
        self.stdout.write(key)
