"""The audit log: every write made through the dashboard or the API."""

from __future__ import annotations

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
        remote_addr=request.META.get("REMOTE_ADDR") or None,
    )
