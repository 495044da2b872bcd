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
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.views.decorators.csrf import csrf_exempt

from .. import selectors
from ..models import Session
from ..pages.heavy import heavy
from ..pages.search import BadSearch, link_hits, search_query
from ..permissions import WORKTREE_PERMISSION
from ..refusals import BodyTooLarge, LengthRequired, WorktreeForbidden, status_of
from ..selectors.search import search
from ..services.archive.health import archive_damage
from ..services.audit import API, actor_of_request, audit_record
from ..services.branching import BranchError, session_rewind, session_rewind_undo
from ..services.branching.inputs import flag_input, fork_input, rewind_input
from ..services.fresh_start import fresh_start
from ..services.worktrees import fork_where_asked
from .auth import ApiRequest, allow, authenticate, error
from .schema import OPENAPI


def token_required(*, write: bool) -> Callable:
    """Authenticate by bearer token (401 without one); writes need the permission (403).

    The view gets the session named in the URL (404 when unknown), and a refusal of
    the engine becomes its status code with the message as `{"error": ...}`.
    """

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @login_not_required
        @wraps(view)
        def wrapped(request: ApiRequest, session_id: uuid.UUID) -> HttpResponse:
            refused = authenticate(request, write=write)
            if refused is not None:
                return refused
            session = selectors.listed_session(session_id)
            if session is None:
                return error(404, f"no session {session_id}")
            try:
                return view(request, session)
            except BranchError as exc:
                return error(status_of(exc), str(exc))

        return wrapped

    return decorate


@csrf_exempt
@login_not_required
@allow("GET")
@heavy
def search_view(request: ApiRequest) -> HttpResponse:
    """GET /api/search?q=…[&project=&agent=&since=&until=&all=1&session=&page=]: ranked
    hits, SESSION_LIMIT sessions a page (`next_page` the next one's number, null at the end)."""
    refused = authenticate(request, write=False)
    if refused is not None:
        return refused
    try:
        query = search_query(request.GET)
    except BadSearch as exc:
        return error(400, str(exc))
    results = search(query)
    link_hits(results, query.text)
    sessions = []
    for group in results.groups:
        hits = [
            {
                "line": hit.line,
                "turn": hit.turn,
                "active": hit.active,
                "part": hit.part,
                "snippet": hit.snippet,
                "marks": [list(span) for span in hit.marks],
                "also_in": hit.also_in,
                "url": hit.url,
            }
            for hit in group.hits
        ]
        listed = {
            "session_id": str(group.session.session_id),
            "ref": group.session.ref,  # the id, or user@machine/<id> on a hub
            "title": group.session.title,
        }
        sessions.append({**listed, "agent": group.session.agent, "more": group.more, "hits": hits})
    return JsonResponse(
        {
            "query": query.text,
            "terms": query.terms,
            "too_short": results.short,
            "matches": results.texts,
            "truncated": results.truncated,
            "session_count": results.sessions,
            "page": query.page,
            "next_page": results.next_page,
            "sessions": sessions,
        }
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


def session_json(session: Session, *, turns: bool = False) -> dict:
    """A session as the API shows it."""
    data = selectors.session_summary(session)
    data["children"] = [
        {
            "session_id": str(c.session_id),
            "ref": c.ref,
            "title": c.title,
            "kind": c.kind,
            "turn": c.fork_turn,
        }
        for c in session.children.order_by("id")
    ]
    data["rewind_undo_available"] = bool(session.rewind_undo)
    # A removed session served from a damaged archive: its text is the index's alone.
    damage = archive_damage(session)
    data["archive_damage"] = damage and {
        "from_byte": damage.start,
        "missing": damage.missing,
        "message": damage.message,
    }
    if turns:
        data["turn_list"] = selectors.turn_list(session)
        data["abandoned"] = [
            {k: b.get(k) for k in ("at_turn", "turns", "leaf_uuid", "prompt")}
            for b in session.abandoned or []
            if isinstance(b, dict)
        ]
    return data


@allow("GET")
@token_required(write=False)
def session_detail(request: ApiRequest, session: Session) -> HttpResponse:
    """GET /api/sessions/<id>: metadata, turns with their prompt text, lineage."""
    return JsonResponse(session_json(session, turns=True))


@allow("POST")
@token_required(write=True)
def session_fork_view(request: ApiRequest, session: Session) -> HttpResponse:
    """POST /api/sessions/<id>/fork {"turn": N, "include_turn": bool, "title": str}.

    201 with the new session; 200 with `session_id: null`, prompt 1 and the command
    that starts a new session for `{"turn": 1, "include_turn": false}` (nothing to keep).
    """
    data = _body(request)
    asked = fork_input(
        turn=data.get("turn"),
        include_turn=data.get("include_turn", True),
        title=data.get("title"),
        leaf=data.get("leaf"),
    )
    if asked.fresh_start:
        start = fresh_start(session=session)
        fresh = {"session_id": None, "turn": start.turn, "prompt": start.prompt}
        return JsonResponse({**fresh, "command": start.command})
    worktree = _worktree_input(request, data.get("worktree"))
    forked = fork_where_asked(
        session=session,
        asked=asked,
        worktree=worktree,
        leave_changes=flag_input(data.get("leave_changes"), name="leave_changes", default=False),
        with_files=flag_input(data.get("with_files"), name="with_files", default=False),
    )
    new = forked.session
    forked.audit(actor_of_request(request, origin=API), source=session, turn=asked.turn)
    body: dict[str, Any] = session_json(new)
    if forked.plan is not None:
        body["worktree"] = forked.worktree_json()
    if not asked.include_turn and asked.turn is not None:
        body["prompt"] = selectors.turn_prompt_text(session, asked.turn)
    return JsonResponse(body, status=201)


def _worktree_input(request: ApiRequest, value: object) -> str | None:
    """`"worktree"`: absent/false for none, true for a made-up name, or the name itself."""
    if value is None or value is False:
        return None
    if value is not True and not isinstance(value, str):
        raise BranchError('"worktree" is true, false or a worktree name')
    user = request.api_token.user
    if settings.TEAM_MODE and (user is None or not user.has_perm(WORKTREE_PERMISSION)):
        raise WorktreeForbidden("this token's user may not fork into git worktrees")
    return "" if value is True else value


@allow("POST")
@token_required(write=True)
def session_rewind_view(request: ApiRequest, session: Session) -> HttpResponse:
    """POST /api/sessions/<id>/rewind {"turn": N}."""
    turn = rewind_input(turn=_body(request).get("turn"))
    rewound = session_rewind(session=session, turn=turn)
    actor = actor_of_request(request, origin=API)
    audit_record(actor=actor, action="rewind", session=rewound, result=None, turn=turn)
    body = session_json(rewound)
    body["backup_id"] = rewound.rewind_undo.get("backup_id")
    return JsonResponse(body)


@allow("POST")
@token_required(write=True)
def session_rewind_undo_view(request: ApiRequest, session: Session) -> HttpResponse:
    """POST /api/sessions/<id>/rewind/undo."""
    restored = session_rewind_undo(session=session)
    actor = actor_of_request(request, origin=API)
    audit_record(actor=actor, action="rewind_undo", session=restored, result=None, turn=None)
    return JsonResponse(session_json(restored))


@csrf_exempt
@login_not_required
def not_found(request: HttpRequest) -> HttpResponse:
    """Any other path under /api/: JSON, like every API answer."""
    return error(404, f"no API endpoint at {request.path[:200]}; see /api/openapi.json")


@allow("GET")
@login_not_required
def openapi(request: HttpRequest) -> HttpResponse:
    """The OpenAPI description of this API."""
    return JsonResponse(OPENAPI)
