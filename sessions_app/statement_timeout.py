"""PostgreSQL: a read request's statements are cancelled past BRANCHBOARD_PG_STATEMENT_TIMEOUT.

A search nginx had already answered 504 went on in PostgreSQL for 5 min 46 s, holding a
worker thread and a backend for no one. A read (GET or HEAD) sets `statement_timeout` on
its connection when it begins and puts it back when the request has finished (Django's
`request_finished`: after a streamed answer's last byte, so an export's queries are bounded
too); PostgreSQL cancels a statement that runs longer, and the page answers 503
(`middleware.DatabaseBusyMiddleware`). A write (a fork, a rewind), the hub's endpoints
(a push's import, a pull of a large file) and everything outside a request (the importer,
the watcher, the commands) never run under it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.signals import request_finished
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse

READS = ("GET", "HEAD")
UNBOUNDED = ("/api/hub/",)  # pushes and pulls move whole files: the hub's own limits apply

_state = threading.local()


class StatementTimeoutMiddleware:
    """Bound each statement of a read request on PostgreSQL (the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        seconds = settings.PG_STATEMENT_TIMEOUT
        if (
            seconds
            and connection.vendor == "postgresql"
            and request.method in READS
            and not request.path.startswith(UNBOUNDED)
        ):
            # An integer of milliseconds, never a caller's text: nothing to quote.
            _set(f"SET statement_timeout = {max(1, round(seconds * 1000))}")
            _state.limited = True
        return self.get_response(request)


def _set(statement: str) -> None:
    """A setting of the connection's session, on the raw connection as Django sets its time
    zone: not one of the page's queries (the tests that count a page's queries count none)."""
    connection.ensure_connection()
    with connection.wrap_database_errors, connection.connection.cursor() as cursor:
        cursor.execute(statement)


def _unbound(**kwargs: Any) -> None:
    """The request is over: its connection, kept for the thread's next request, unbounded."""
    if not getattr(_state, "limited", False):
        return
    _state.limited = False
    if connection.connection is None:  # closed at the request's end (its age, an error)
        return
    try:
        _set("SET statement_timeout TO DEFAULT")
    except DatabaseError:
        connection.close()  # whatever state it is in, the next request opens a fresh one


request_finished.connect(_unbound, dispatch_uid="branchboard-statement-timeout")
