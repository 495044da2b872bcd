"""The audit log: every write made through the pages, the API or a management command."""

from __future__ import annotations

import functools
import getpass
import ipaddress
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest

from ..models import AuditEntry, Session

PAGE, API, COMMAND = "web", "api", "command"
# Characters of an entry's detail: what a request sent (a namespace, a path, a prompt) is
# kept to this much, so no request can make a row large.
DETAIL_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asked for a write, and through which door."""

    name: str
    origin: str  # PAGE, API or COMMAND
    user: Any = None  # the Django user, when there is one
    address: str | None = None


def actor_of_request(request: HttpRequest, *, origin: str) -> Actor:
    """The user (or API token) behind a web request, and the client's address."""
    user = getattr(request, "user", None)
    token = getattr(request, "api_token", None)
    if token is not None:
        name, user = f"token:{token.name}", token.user
    elif user is not None and user.is_authenticated:
        name = user.get_username()
    else:
        name, user = "local", None
    return Actor(name=name, origin=origin, user=user, address=client_address(request))


def actor_of_command() -> Actor:
    """The operating-system user running a management command."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid
        name = "unknown"
    return Actor(name=f"os:{name}", origin=COMMAND)


def audit_record(
    *,
    actor: Actor,
    action: str,
    session: Session | None,
    result: Session | None,
    turn: int | None,
    detail: str = "",
) -> AuditEntry:
    """Write one audit entry for a write that succeeded (or a known user's refusal); its
    detail escaped and at most DETAIL_LIMIT characters."""
    return AuditEntry.objects.create(
        user=actor.user,
        actor=actor.name[:150],
        via=actor.origin,
        action=action or "branch",
        session_id=session.session_id if session else None,
        result_session_id=result.session_id if result else None,
        turn=turn if turn is None or turn >= 0 else None,
        remote_addr=actor.address,
        detail=request_text(detail, DETAIL_LIMIT),
    )


def request_text(text: str, limit: int) -> str:
    """`text` from a request, fit for a row or a log line: control characters escaped (a NUL,
    which PostgreSQL's text refuses; line breaks that would forge a log's lines), and at most
    `limit` characters, the cut said."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit * 4 + 1])
    if len(shown) <= limit:
        return shown
    mark = f"… (cut: {len(text)} characters)"
    return shown[: max(limit - len(mark), 0)] + mark


def client_address(request: HttpRequest) -> str | None:
    """The client's address: the trusted proxy's X-Forwarded-For, else the peer's."""
    if settings.TRUSTED_PROXY and from_proxy(request):
        # The shipped nginx site sets the header to the address it saw; a proxy that
        # appends instead leaves the client's own say first, so trust the last entry.
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1].strip()
        if _is_ip(forwarded):
            return forwarded
    peer = request.META.get("REMOTE_ADDR", "")
    return peer if _is_ip(peer) else None


def from_proxy(request: HttpRequest) -> bool:
    """Whether the peer is the reverse proxy (BRANCHBOARD_PROXY_ADDRESSES), whose
    forwarded headers are its word; anyone else's are their own say."""
    return _peer_in(request.META.get("REMOTE_ADDR", ""), tuple(settings.PROXY_ADDRESSES))


@functools.lru_cache(maxsize=64)
def _peer_in(peer: str, proxies: tuple[str, ...]) -> bool:
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    for proxy in proxies:
        try:
            if address in ipaddress.ip_network(proxy, strict=False):
                return True
        except ValueError:
            continue  # not an address (settings refuses one at start)
    return False


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
