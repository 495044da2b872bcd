"""A database lock held too long by another writer: "busy, try again", never a 500.

SQLite lets one writer in at a time and PostgreSQL makes a writer wait for the
rows or tables another transaction holds; both give up after the configured wait
(`BRANCHBOARD_DB_TIMEOUT`) with an `OperationalError`. Nothing was changed then,
so the honest answer is to try again: 503 with Retry-After for pages and the API
(`{"error": ...}` like every API error), 409 for an htmx request, because the
page's htmx shows a 4xx answer in place and drops a 5xx one.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.loader import render_to_string
from django.utils.http import url_has_allowed_host_and_scheme

from .models import ApiToken
from .pages.errors import SERVER_ERROR, error_answer, under_api
from .services.audit import from_proxy
from .services.owner_token import OwnerTokenError, is_owner_token, owner_token, owner_token_path

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


# The one-click link's query parameter, and how long the browser keeps the cookie it buys.
TOKEN_QUERY = "token"  # noqa: S105 (a parameter's name, not a secret)
OWNER_COOKIE_AGE = 30 * 24 * 3600  # seconds; `make run` prints the link again at each start


def owner_cookie_name(port: str) -> str:
    """The owner's cookie, one per port: cookies ignore ports, and two dashboards on one
    machine (two data folders) must not overwrite each other's (as Jupyter names its own)."""
    return f"branchboard-owner-{port}"


def is_loopback(address: str) -> bool:
    """Whether a peer's address is this machine's loopback (IPv4, IPv6, IPv4-mapped)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # a Unix socket's empty address, or garbage
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _bearer(request: HttpRequest) -> str | None:
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return key.strip() or None


class OwnerOnlyMiddleware:
    """Local mode answers its owner only: other accounts on the machine get 403, nothing more.

    A local dashboard has no login, and every account on the machine can reach 127.0.0.1,
    so the owner is whoever holds the owner token (`services.owner_token`, a 0600 file in
    the 0700 data folder): as `?token=` once (the link `make run` prints; it becomes an
    HttpOnly, SameSite=Strict cookie and the address loses it), as that cookie, or as
    `Authorization: Bearer <token>` (scripts). The JSON API's own bearer tokens pass too:
    only the owner can make them (`manage.py create_api_token` needs the data folder's
    database). A peer that is not loopback is refused whatever it carries. Static
    files stay open to loopback peers: they are the app's own public files. Team mode has
    logins and permissions instead, and this steps aside.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.static = "/" + settings.STATIC_URL.lstrip("/")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.TEAM_MODE:
            return self.get_response(request)
        if not is_loopback(request.META.get("REMOTE_ADDR", "")):
            return error_answer(
                request, 403, "This dashboard answers this machine only (it is in local mode)."
            )
        if request.path.startswith(self.static):
            return self.get_response(request)
        try:
            token = owner_token(folder=settings.DATA_DIR)
        except OwnerTokenError as exc:
            return error_answer(request, 403, f"Nobody can be let in: {exc}.")
        cookie = owner_cookie_name(request.get_port())
        # Only a page's GET takes the link's token: a form's action never carries it.
        offered = request.GET.get(TOKEN_QUERY)
        if request.method in ("GET", "HEAD") and is_owner_token(offered, token):
            return self._let_in(request, cookie, token)
        bearer = _bearer(request)
        if (
            is_owner_token(request.COOKIES.get(cookie), token)
            or is_owner_token(bearer, token)
            or _is_api_token(bearer)
        ):
            return self.get_response(request)
        return error_answer(request, 403, _refusal(request))

    def _let_in(self, request: HttpRequest, cookie: str, token: str) -> HttpResponse:
        """The one-click link: the token becomes a cookie, and the address loses it (out of
        the history, the address bar and the next page's Referer)."""
        query = request.GET.copy()
        del query[TOKEN_QUERY]
        target = request.path + (f"?{query.urlencode()}" if query else "")
        if not url_has_allowed_host_and_scheme(target, allowed_hosts=None):
            target = "/"  # a path like //elsewhere/ would leave the site
        response = HttpResponseRedirect(target)
        response.set_cookie(
            cookie,
            token,
            max_age=OWNER_COOKIE_AGE,
            httponly=True,
            samesite="Strict",
            secure=request.is_secure(),
        )
        response["Cache-Control"] = "no-store"
        return response


def _is_api_token(key: str | None) -> bool:
    if not key:
        return False
    return ApiToken.objects.filter(key_hash=ApiToken.hash(key)).exists()


def _refusal(request: HttpRequest) -> str:
    path = owner_token_path(settings.DATA_DIR)
    if under_api(request):
        return (
            "This dashboard answers its owner only: send Authorization: Bearer with a token "
            f"of manage.py create_api_token or the owner token in {path}."
        )
    return (
        "This dashboard answers its owner only. Open it with the link `make run` printed "
        f"(manage.py dashboard_url prints it again), which carries the token kept in {path}; "
        "scripts send it, or a token of manage.py create_api_token, as Authorization: Bearer."
    )
