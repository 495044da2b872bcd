"""manage.py hub_login URL: keep a hub's token in the data folder, for push and pull."""

from __future__ import annotations

import getpass
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.services.hub.client import Hub, HubError, Login, check_url, login_save
from sessions_app.services.hub.client import machine_name as this_machine
from sessions_app.terminal import shown


class Command(BaseCommand):
    help = (
        "Log in to a team hub: asks for a token made on the hub (manage.py create_api_token "
        "--user YOU, there), checks it may push, and keeps it in the data folder (0600)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="the hub's address, https://hub.example")
        parser.add_argument("--user", help="your user name on the hub (default: the token's)")
        parser.add_argument(
            "--machine", default=None, help="this machine's name there (default: its host name)"
        )
        parser.add_argument(
            "--token-stdin", action="store_true", help="read the token from standard input"
        )

    def handle(self, *args: Any, url: str, user: str | None, machine: str | None, **o: Any) -> None:
        try:
            url = check_url(url)
        except HubError as exc:
            raise CommandError(shown(exc)) from None
        if o["token_stdin"]:
            token = sys.stdin.readline().strip()
        else:
            token = getpass.getpass(
                shown(f"token made on {url} (manage.py create_api_token --user YOU): ")
            )
        if not token:
            raise CommandError("no token given; nothing saved")
        machine = machine or this_machine()
        name = user or "-"
        try:
            if user is None:
                # The hub says whose token it is when asked for a namespace that is not its.
                name = Hub(Login(url, f"{name}@{machine}", token)).whoami_user()
            namespace = f"{name}@{machine}"
            Hub(Login(url, namespace, token)).json("GET", "whoami")
        except HubError as exc:
            raise CommandError(f"{shown(exc)}; nothing saved") from None
        path = login_save(Login(url, namespace, token))
        # The user name is the hub's answer: escaped, as every text from the hub.
        self.stdout.write(shown(f"logged in to {url} as {namespace}; the token is kept in {path}"))
