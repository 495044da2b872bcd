"""The hub's end of `push_sessions` and `pull_sessions`: JSON and zstd behind bearer tokens.

Pushing is its own permission (`push_sessions`), into the token owner's namespaces
only; a hub that is not on loopback takes pushes over HTTPS alone. Every push, pull
and refusal of a known token is written to the audit log with the namespace and the
path, bounded; a request without one is only logged (api.auth), so no one unknown
writes rows.
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Callable, Iterator
from functools import wraps

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from ...models import HubNamespace, Session
from ...services.audit import API, actor_of_request, audit_record, client_address, request_text
from ...services.hub import batch_receiving, chunks, consent, offering, receiving
from ...services.hub.indexing import NotImported
from ...services.hub.namespaces import BadHubPath, hub_path_check, namespace_folder
from ...services.hub.receiving import PushRefused
from ...services.roots import open_regular
from ..auth import ApiRequest, allow, authenticate, error
from .bodies import SlowBody as SlowBody
from .bodies import _body as _body
from .bodies import _read_side_shut as _read_side_shut
from .bodies import body_deadline as body_deadline

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

PUSH_PERMISSION = "sessions_app.push_sessions"
MAX_PATHS = 5000  # paths in one state request
# Characters of a request's namespace and path an audit entry keeps (a namespace's column
# holds 130); the whole detail is bounded too (services.audit.DETAIL_LIMIT).
AUDIT_NAMESPACE, AUDIT_PATH = 130, 512


def _loopback(request: HttpRequest) -> bool:
    address = client_address(request) or ""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def hub_endpoint(
    view: Callable[..., HttpResponse | StreamingHttpResponse],
) -> Callable[..., HttpResponse | StreamingHttpResponse]:
    """Token, permission, TLS and namespace checks; a refusal is JSON, audited once the
    token is known."""

    @csrf_exempt
    @login_not_required
    @wraps(view)
    def wrapped(request: ApiRequest) -> HttpResponse | StreamingHttpResponse:
        name = request.GET.get("namespace", "")
        refused = authenticate(request, write=False)
        if refused is not None:
            return refused  # no one known: logged (api.auth), no audit row
        user = request.api_token.user
        try:
            if not request.is_secure() and not _loopback(request):
                raise HttpsOnly("a hub takes pushes and pulls over HTTPS only")
            _body_check(request, view.__name__)
            if user is None or not user.is_active or not user.has_perm(PUSH_PERMISSION):
                raise receiving.NotYours("this token's user may not push to this hub")
            if view.__name__ == "whoami" and request.GET.get("who") == "1":
                # hub_login asks whose token this is before it knows its namespace.
                return JsonResponse({"user": user.get_username()})
            namespace = receiving.namespace_for(user, name)
            with body_deadline(request):
                return view(request, namespace)
        except (PushRefused, BadHubPath, NotImported) as exc:
            status = getattr(exc, "status", 400)
            _audit(request, "push-refused", name, str(exc))
            return error(status, str(exc))

    return wrapped


class HttpsOnly(PushRefused):
    status = 403


def _body_check(request: HttpRequest, endpoint: str) -> None:
    """A body over the endpoint's limit is refused by its Content-Length, before it is read."""
    if endpoint in ("chunk", "batch"):
        limit = chunks.max_chunk() + (1 << 16)  # a chunk that zstd could not shrink
    else:
        limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0) or chunks.max_chunk()
    try:
        sent = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise PushRefused("the Content-Length header is not a number") from None
    if sent > limit:
        raise chunks.TooLarge(f"a request here is at most {limit} bytes, not {sent}")


def _audit(
    request: ApiRequest, action: str, namespace: str, detail: str, path: str | None = None
) -> None:
    if getattr(request, "api_token", None) is None:
        return  # only a known token's requests are audited; others are logged (api.auth)
    path = request.GET.get("path", "") if path is None else path
    session = None
    try:
        root, rest = hub_path_check(path)
        file = namespace_folder(namespace) / root / rest
    except BadHubPath:
        pass  # not a session file's path: no session to name
    else:
        session = Session.objects.filter(path=str(file)).first()
    audit_record(
        actor=actor_of_request(request, origin=API),
        action=action,
        session=session,
        result=None,
        turn=None,
        detail=" ".join(
            piece
            for piece in (
                request_text(namespace, AUDIT_NAMESPACE),
                request_text(path, AUDIT_PATH),
                detail,  # the refusal may quote them again: audit_record bounds the whole
            )
            if piece
        ),
    )


def _int(request: HttpRequest, name: str) -> int:
    try:
        value = int(request.GET.get(name, ""))
    except ValueError:
        raise PushRefused(f"{name}: a whole number is expected") from None
    if value < 0:
        raise PushRefused(f"{name}: must not be negative")
    return value


def _json(request: HttpRequest) -> dict:
    try:
        sent = int(request.META.get("CONTENT_LENGTH") or 0)  # a number: _body_check
        data = orjson.loads(_body(request, sent))
    except orjson.JSONDecodeError:
        raise PushRefused("the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise PushRefused("the request body must be a JSON object")
    return data


@allow("GET")
@hub_endpoint
def whoami(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """GET /api/hub/whoami?namespace=user@machine: the token may push there."""
    return JsonResponse({"namespace": namespace.name, "user": namespace.user.get_username()})


@allow("POST")
@hub_endpoint
def state(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """POST /api/hub/state?namespace=…, {"paths": [...]}: what the hub holds of each."""
    paths = _json(request).get("paths")
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise PushRefused("paths: a list of strings is expected")
    if len(paths) > MAX_PATHS:
        raise PushRefused(f"paths: at most {MAX_PATHS} in one request")
    return JsonResponse(
        {"namespace": namespace.name, "files": receiving.files_state(namespace, paths)}
    )


@allow("POST")
@hub_endpoint
def chunk(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """POST /api/hub/chunk?namespace&path&offset&length&sha256&head&tail&staged, zstd body."""
    path = request.GET.get("path", "")
    receiving.target_of(namespace, path)  # the path is refused before the body is read
    length = _int(request, "length")
    sent = int(request.META.get("CONTENT_LENGTH") or -1)  # at most its limit (_body_check)
    if sent < 0:
        raise PushRefused("send the chunk with a Content-Length header")
    size = receiving.chunk_receive(
        namespace,
        path,
        body=_body(request, sent),
        length=length,
        sha256=request.GET.get("sha256", ""),
        offset=_int(request, "offset"),
        head=request.GET.get("head", ""),
        tail=request.GET.get("tail", ""),
        staged=request.GET.get("staged") == "1",
    )
    _audit(request, "push", namespace.name, f"{length} bytes at {size - length}")
    return JsonResponse({"size": size})


@allow("POST")
@hub_endpoint
def commit(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """POST /api/hub/commit?namespace&path&size&sha256: the staged file in place, imported."""
    path = request.GET.get("path", "")
    session = receiving.commit(
        namespace, path, size=_int(request, "size"), sha256=request.GET.get("sha256", "")
    )
    _audit(request, "push", namespace.name, f"whole file, {request.GET.get('size')} bytes")
    caught_up = session.search_lines == session.line_count
    return JsonResponse({"session_id": str(session.session_id), "caught_up": caught_up})


@allow("POST")
@hub_endpoint
def batch(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """POST /api/hub/batch?namespace=…, zstd body (a manifest line, then the bytes): many
    small new files at once, each stored or refused on its own, then indexed together."""
    sent = int(request.META.get("CONTENT_LENGTH") or -1)  # at most its limit (_body_check)
    if sent < 0:
        raise PushRefused("send the batch with a Content-Length header")
    files = batch_receiving.batch_receive(namespace, _body(request, sent))
    for path, said in files.items():
        if "error" in said and "size" not in said:
            _audit(request, "push-refused", namespace.name, str(said["error"]), path=path)
        else:
            _audit(request, "push", namespace.name, f"whole file, {said['size']} bytes", path=path)
    return JsonResponse({"namespace": namespace.name, "files": files})


@allow("POST")
@hub_endpoint
def catch_up(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """POST /api/hub/catch-up?namespace&path: a big committed file's search words and usage."""
    session = receiving.catch_up(namespace, request.GET.get("path", ""))
    return JsonResponse({"session_id": str(session.session_id), "caught_up": True})


@allow("GET")
@hub_endpoint
def pulls(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """GET /api/hub/pulls?namespace=…: the files made on the hub that the machine takes back
    (`files`), those a teammate made that wait for the owner's consent (`held`)."""
    return JsonResponse({"namespace": namespace.name, **offering.pulls(namespace)})


@allow("POST")
@hub_endpoint
def accept(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """POST /api/hub/accept?namespace&session=<id>: the owner lets a teammate's fork come."""
    session = consent.accept(namespace, request.GET.get("session", ""))
    _audit(request, "pull-accepted", namespace.name, f"session {session.session_id}", path="")
    return JsonResponse({"session_id": str(session.session_id)})


@allow("POST")
@hub_endpoint
def pulled(request: ApiRequest, namespace: HubNamespace) -> HttpResponse:
    """POST /api/hub/pulled?namespace&path&size: the machine wrote that file; not offered again."""
    offering.pulled(namespace, request.GET.get("path", ""), _int(request, "size"))
    _audit(request, "pulled", namespace.name, "")
    return JsonResponse({"ok": True})


@allow("GET")
@hub_endpoint
def file(request: ApiRequest, namespace: HubNamespace) -> StreamingHttpResponse:
    """GET /api/hub/file?namespace&path: one of the namespace's files, zstd-compressed."""
    path = request.GET.get("path", "")
    target = offering.file_for_pull(namespace, path)
    root = receiving.target_of(namespace, path)[0]
    f = open_regular(target, root=root)
    _audit(request, "pull", namespace.name, "")

    def compressed() -> Iterator[bytes]:
        packer = zstd.ZstdCompressor(level=3)
        with f:
            while block := f.read(1 << 20):
                yield packer.compress(block)
        yield packer.flush()

    response = StreamingHttpResponse(compressed(), content_type="application/zstd")
    return response
