from __future__ import annotations

from typing import Any

from django.apps import AppConfig


def _words_attach(sender: Any, connection: Any, **kwargs: Any) -> None:
    """SQLite's words file attached to a new connection; the search package (its indexing,
    texts and archive) is loaded only then, not by every command's `django.setup()`."""
    if connection.vendor != "sqlite":
        return
    from .services.searching.words import words_attach

    words_attach(sender, connection, **kwargs)


def _words_made(connection: Any) -> None:
    from .services.searching.words import words_made

    words_made(connection)


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Agent sessions"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from .data_folder import sqlite_files_private

        # SQLite makes its files with the umask's mode; the data folder's are private.
        connection_created.connect(sqlite_files_private, dispatch_uid="sqlite_files_private")

        from django.db import connections
        from django.db.models.signals import post_migrate

        # SQLite: the search index's words, a database file of their own.
        connection_created.connect(_words_attach, dispatch_uid="words_attach")
        post_migrate.connect(
            lambda using="default", **kw: _words_made(connections[using]),
            sender=self,
            dispatch_uid="words_made",
            weak=False,
        )

        from django.urls import register_converter

        from .session_refs import SessionRefConverter

        # `<sref:session_id>`: a session's id, or `user@machine/<id>` on a team hub.
        register_converter(SessionRefConverter, "sref")
