"""The JSON API: the same actions as the pages, for scripts, behind bearer tokens.

No cookie is ever enough here: a request without a valid `Authorization: Bearer`
token gets 401 and nothing is done, so no other web page can drive the API.
Every answer is JSON, errors included (`{"error": ...}`): a wrong method, a body
too large, unreadable or malformed gets its status code and a message, never a page.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import wraps

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from . import selectors
from .api_schema import OPENAPI
from .models import ApiToken, Session
from .permissions import WRITE_PERMISSION
from .services.audit import audit_record
from .services.branching import (
    BranchError,
    InvalidTurn,
    session_fork,
    session_rewind,
    session_rewind_undo,
)
from .services.fresh_start import fresh_start


class BodyTooLarge(BranchError):
    status = 413


class LengthRequired(BranchError):
    status = 411


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def allow(*methods: str) -> Callable:
    """Like Django's require_http_methods, but the 405 is JSON like every API error."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            if request.method not in methods:
                allowed = " or ".join(methods)
                response = _error(405, f"{request.method} is not allowed here; use {allowed}")
                response["Allow"] = ", ".join(methods)
                return response
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def token_required(*, write: bool) -> Callable:
    """Authenticate by bearer token (401 without one); writes need the permission (403).

    The view gets the session named in the URL (404 when unknown), and a refusal of
    the engine becomes its status code with the message as `{"error": ...}`.
    """

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @login_not_required
        @wraps(view)
        def wrapped(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
            header = request.headers.get("Authorization", "")
            scheme, _, key = header.partition(" ")
            token = None
            if scheme.lower() == "bearer" and key.strip():
                token = (
                    ApiToken.objects.select_related("user")
                    .filter(key_hash=ApiToken.hash(key.strip()))
                    .first()
                )
            if token is None:
                response = _error(401, "missing or invalid bearer token")
                response["WWW-Authenticate"] = 'Bearer realm="branchboard"'
                return response
            if settings.TEAM_MODE and (token.user is None or not token.user.is_active):
                return _error(401, "this token belongs to no active user")
            if write and settings.TEAM_MODE and not token.user.has_perm(WRITE_PERMISSION):
                return _error(403, "this token's user may not branch, fork or rewind")
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
            request.api_token = token
            session = _session(session_id)
            if session is None:
                return _error(404, f"no session {session_id}")
            try:
                return view(request, session)
            except BranchError as exc:
                return _error(exc.status, str(exc))

        return wrapped

    return decorate


def _session(session_id: uuid.UUID) -> Session | None:
    return (
        Session.objects.listed()
        .select_related("project", "parent")
        .filter(session_id=session_id)
        .first()
    )


def _body(request: HttpRequest) -> dict:
    # Under WSGI a body without Content-Length reads as empty, and an empty fork body
    # means "branch the whole session": refuse rather than guess.
    if not request.META.get("CONTENT_LENGTH") and "Transfer-Encoding" in request.headers:
        raise LengthRequired("send the request body with a Content-Length header")
    try:
        raw = request.body
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise BodyTooLarge(f"the request body is larger than {limit} bytes") from None
    except UnreadablePostError:
        raise BranchError("the request body could not be read") from None
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BranchError("the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise BranchError("the request body must be a JSON object")
    return data


def _turn_field(data: dict, *, required: bool) -> int | None:
    turn = data.get("turn")
    if turn is None and not required:
        return None
    if isinstance(turn, bool) or not isinstance(turn, int):
        # The same words as the pages and the commands; a JSON string shows as 'abc'.
        shown = repr(turn[:40]) if isinstance(turn, str) else orjson.dumps(turn).decode()[:40]
        raise InvalidTurn(f"turn must be a whole number, not {shown}")
    return turn


def session_json(session: Session, *, turns: bool = False) -> dict:
    """A session as the API shows it."""
    data = selectors.session_summary(session)
    data["children"] = [
        {"session_id": str(c.session_id), "title": c.title, "kind": c.kind, "turn": c.fork_turn}
        for c in session.children.order_by("id")
    ]
    data["rewind_undo_available"] = bool(session.rewind_undo)
    if turns:
        data["turn_list"] = selectors.turn_list(session)
    return data


@allow("GET")
@token_required(write=False)
def session_detail(request: HttpRequest, session: Session) -> HttpResponse:
    """GET /api/sessions/<id>: metadata, turns with their prompt text, lineage."""
    return JsonResponse(session_json(session, turns=True))


@allow("POST")
@token_required(write=True)
def session_fork_view(request: HttpRequest, session: Session) -> HttpResponse:
    """POST /api/sessions/<id>/fork {"turn": N, "include_turn": bool, "title": str}.

    201 with the new session; 200 with `session_id: null`, prompt 1 and the command
    that starts a new session for `{"turn": 1, "include_turn": false}` (nothing to keep).
    """
    data = _body(request)
    turn = _turn_field(data, required=False)
    include = data.get("include_turn", True)
    if not isinstance(include, bool):
        raise BranchError("include_turn must be true or false")
    if not include and turn is None:
        raise InvalidTurn("include_turn needs a turn: the turn whose prompt to edit")
    title = data.get("title")
    if title is not None and (not isinstance(title, str) or len(title) > 300):
        raise BranchError("title must be a string of at most 300 characters")
    if not include and turn == 1:
        start = fresh_start(session=session)
        body = {"session_id": None, "turn": start.turn, "prompt": start.prompt}
        return JsonResponse({**body, "command": start.command})
    new = session_fork(session=session, turn=turn, include_turn=include, title=title or None)
    audit_record(
        request=request, action=new.kind, session=session, result=new, turn=turn, via="api"
    )
    body = session_json(new)
    if not include and turn is not None:
        body["prompt"] = selectors.turn_prompt_text(session, turn)
    return JsonResponse(body, status=201)


@allow("POST")
@token_required(write=True)
def session_rewind_view(request: HttpRequest, session: Session) -> HttpResponse:
    """POST /api/sessions/<id>/rewind {"turn": N}."""
    turn = _turn_field(_body(request), required=True)
    rewound = session_rewind(session=session, turn=turn)
    audit_record(
        request=request, action="rewind", session=rewound, result=None, turn=turn, via="api"
    )
    body = session_json(rewound)
    body["backup_id"] = rewound.rewind_undo.get("backup_id")
    return JsonResponse(body)


@allow("POST")
@token_required(write=True)
def session_rewind_undo_view(request: HttpRequest, session: Session) -> HttpResponse:
    """POST /api/sessions/<id>/rewind/undo."""
    restored = session_rewind_undo(session=session)
    audit_record(
        request=request, action="rewind_undo", session=restored, result=None, turn=None, via="api"
    )
    return JsonResponse(session_json(restored))


@allow("GET")
@login_not_required
def openapi(request: HttpRequest) -> HttpResponse:
    """The OpenAPI description of this API."""
    return JsonResponse(OPENAPI)
