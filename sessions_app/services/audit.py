"""The audit log: every write made through the dashboard or the API."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

from ..models import AuditEntry, Session


def audit_record(
    *,
    request: HttpRequest,
    action: str,
    session: Session,
    result: Session | None,
    turn: int | None,
    via: str = "web",
) -> AuditEntry:
    """Write one audit entry for a write that succeeded."""
    user = getattr(request, "user", None)
    token = getattr(request, "api_token", None)
    if token is not None:
        actor = f"token:{token.name}"
        user = token.user
    elif user is not None and user.is_authenticated:
        actor = user.get_username()
    else:
        actor, user = "local", None
    return AuditEntry.objects.create(
        user=user,
        actor=actor[:150],
        via=via,
        action=action or "branch",
        session_id=session.session_id,
        result_session_id=result.session_id if result else None,
        turn=turn if turn is None or turn >= 0 else None,
        remote_addr=client_address(request),
    )


def client_address(request: HttpRequest) -> str | None:
    """The client's address: the trusted proxy's X-Forwarded-For, else the peer's."""
    if settings.TRUSTED_PROXY:
        # The shipped nginx site sets the header to the address it saw; a proxy that
        # appends instead leaves the client's own say first, so trust the last entry.
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1].strip()
        if _is_ip(forwarded):
            return forwarded
    peer = request.META.get("REMOTE_ADDR", "")
    return peer if _is_ip(peer) else None


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
