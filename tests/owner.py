"""The local dashboard's owner in tests: the cookie the one-click link gives, and a stranger.

tests/conftest.py makes every `django.test.Client` the owner's; tests/browser/conftest.py
gives the browser the cookie.
"""

from __future__ import annotations

from django.test import Client


def owner_cookie(port: str = "80") -> tuple[str, str]:
    """The cookie the one-click link gives the owner's browser on `port` (name, value)."""
    from django.conf import settings

    from sessions_app.middleware import owner_cookie_name
    from sessions_app.services.owner_token import owner_token

    return owner_cookie_name(port), owner_token(folder=settings.DATA_DIR)


def stranger(**kwargs: object) -> Client:
    """A test client without the owner's cookie: another account on the same machine."""
    client = Client(**kwargs)  # type: ignore[arg-type]
    client.as_owner = False  # type: ignore[attr-defined]
    return client
