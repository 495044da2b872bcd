"""A database lock held too long by another writer: "busy, try again", never a 500.

SQLite lets one writer in at a time and PostgreSQL makes a writer wait for the
rows or tables another transaction holds; both give up after the configured wait
(`BRANCHBOARD_DB_TIMEOUT`) with an `OperationalError`. Nothing was changed then,
so the honest answer is to try again: 503 with Retry-After for pages and the API
(`{"error": ...}` like every API error), 409 for an htmx request, because the
page's htmx shows a 4xx answer in place and drops a 5xx one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from .pages.errors import SERVER_ERROR, under_api
from .services.audit import from_proxy

logger = logging.getLogger(__name__)

RETRY_AFTER = 5  # seconds
MESSAGE = (
    "The database is busy: another process holds a lock on it. "
    "Nothing was changed; try again in a few seconds."
)
# A read that ran past BRANCHBOARD_PG_STATEMENT_TIMEOUT (sessions_app.statement_timeout).
TIMEOUT_MESSAGE = (
    "This page asked the database for more work than a page may take, and it was stopped; "
    "nothing was changed. Narrow it (fewer or longer words, a project, dates) or try again."
)
QUERY_CANCELED = "57014"  # statement_timeout
# PostgreSQL: lock_not_available (lock_timeout), query_canceled (statement_timeout),
# deadlock_detected.
LOCK_SQLSTATES = frozenset({"55P03", QUERY_CANCELED, "40P01"})
# What Django itself answers as 400/403/404 through the error handlers.
REFUSALS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation)
SQLITE_LOCK_MESSAGES = ("database is locked", "database table is locked")


def is_lock_error(exc: BaseException) -> bool:
    """Whether `exc` is a database giving up on a lock, not a real failure."""
    if not isinstance(exc, OperationalError):
        return False
    sqlstate = getattr(exc.__cause__, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate in LOCK_SQLSTATES
    text = str(exc).lower()
    return any(message in text for message in SQLITE_LOCK_MESSAGES)


class DatabaseBusyMiddleware:
    """Turn a view's lock error into "busy, try again" (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_lock_error(exception):
            return None
        logger.warning("%s %s: database busy (%s)", request.method, request.path, exception)
        timed_out = getattr(exception.__cause__, "sqlstate", None) == QUERY_CANCELED
        message = TIMEOUT_MESSAGE if timed_out else MESSAGE
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse({"error": message}, status=503)
        elif getattr(request, "htmx", False):
            html = render_to_string("sessions_app/busy.html#busy-message", {"message": message})
            response = HttpResponse(html, status=409)
        else:
            # Rendered without the request: the page must not touch the database.
            again = request.get_full_path() if request.method == "GET" else None
            html = render_to_string("sessions_app/busy.html", {"message": message, "again": again})
            response = HttpResponse(html, status=503)
        response["Retry-After"] = str(RETRY_AFTER)
        return response


# What a proxy forwards: dropped from a peer that is not the proxy (services.audit.from_proxy).
FORWARDED = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST")


class ForwardedHeadersMiddleware:
    """A client that reaches the app past the proxy cannot say which address it has, nor
    that it came over HTTPS: its forwarded headers are dropped (issue 41 item 16)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not from_proxy(request):
            for name in FORWARDED:
                request.META.pop(name, None)
        return self.get_response(request)


class ApiErrorMiddleware:
    """Under /api/, an unexpected error in a view is `{"error": ...}` with 500, never a page.

    Refusals Django turns into 400/403/404 are left to the error handlers
    (sessions_app/pages/errors.py), which answer JSON under /api/ as well.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not under_api(request) or isinstance(exception, REFUSALS):
            return None
        # Answered here, so Django does not log it: log it as it would, with the traceback.
        logger.error(
            "Internal Server Error: %s",
            request.path,
            exc_info=exception,
            extra={"request": request},
        )
        return JsonResponse({"error": SERVER_ERROR}, status=500)
