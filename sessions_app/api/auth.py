"""Who the JSON API lets in: bearer tokens, and the JSON answers of refusals.

No cookie is ever enough: a request without a valid `Authorization: Bearer` token gets
401 and nothing is done. A local dashboard also takes its owner token there. The pages'
API (`api`) and the hub's (`api.hub`) both use this. A refusal here writes no row (anyone
can send one): it is a log line of bounded length.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from functools import wraps

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from ..models import ApiToken
from ..permissions import WRITE_PERMISSION
from ..services.audit import client_address, request_text
from ..services.owner_token import OwnerTokenError, is_owner_token, owner_token

logger = logging.getLogger("branchboard.api")
LOGGED_PATH = 200  # characters of a refused request's path in its log line


class ApiRequest(HttpRequest):
    """A request the bearer token let in; the audit log names the token."""

    api_token: ApiToken


TOKEN_USE_STAMP = timedelta(minutes=1)  # how stale a token's `last_used_at` may be


def error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def allow(*methods: str) -> Callable:
    """Like Django's require_http_methods, but the 405 is JSON like every API error."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            if request.method not in methods:
                allowed = " or ".join(methods)
                response = error(405, f"{request.method} is not allowed here; use {allowed}")
                response["Allow"] = ", ".join(methods)
                return response
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def authenticate(request: ApiRequest, *, write: bool) -> HttpResponse | None:
    """Let the request's bearer token in (None), or the 401/403 answer that refuses it."""
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    token = None
    if scheme.lower() == "bearer" and _is_the_owners(key.strip()):
        # A local dashboard's owner token (middleware.OwnerOnlyMiddleware let it in): the
        # owner, as a token of no user that is no row; the audit log says "token:owner".
        request.api_token = ApiToken(name="owner")
        return None
    if scheme.lower() == "bearer" and key.strip():
        tokens = ApiToken.objects.select_related("user")
        token = tokens.filter(key_hash=ApiToken.hash(key.strip())).first()
    if token is None:
        response = _refused(request, 401, "missing or invalid bearer token")
        response["WWW-Authenticate"] = 'Bearer realm="branchboard"'
        return response
    user = token.user
    if settings.TEAM_MODE:
        if user is None or not user.is_active:
            return _refused(request, 401, "this token belongs to no active user")
        if write and not user.has_perm(WRITE_PERMISSION):
            return _refused(request, 403, "this token's user may not branch, fork or rewind")
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > TOKEN_USE_STAMP:
        # Once a minute at most: a machine pushing every second writes no row for it.
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    request.api_token = token
    return None


def _refused(request: HttpRequest, status: int, message: str) -> JsonResponse:
    """The refusal, and one log line of bounded length for it: no row, whoever sent it."""
    logger.warning(
        "%s %s from %s refused (%d): %s",
        request.method,
        request_text(request.path, LOGGED_PATH),
        client_address(request) or "an unknown address",
        status,
        message,
    )
    return error(status, message)


def _is_the_owners(key: str) -> bool:
    """Whether `key` is the local dashboard's owner token (never in team mode)."""
    if settings.TEAM_MODE or not key:
        return False
    try:
        return is_owner_token(key, owner_token(folder=settings.DATA_DIR))
    except OwnerTokenError:
        return False
