"""Who may send a session to a machine: a file made on the hub goes to its namespace's
machine only as the namespace's owner allows.

Anyone who may write on the hub may fork a pushed session there, and the fork is made
in the namespace's folder, beside its source. The owner's own forks go back to their
machine as before; one a teammate made stays on the hub until the owner accepts it
(`pull_sessions --accept <id>`), so nobody writes files on someone else's machine.
Who made each is recorded when it is made (`fork_made`, through every door's audit).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.utils import timezone

from ...models import HubFork, HubNamespace, Session
from .namespaces import namespace_folder
from .receiving import PushRefused, target_of


class NotAccepted(PushRefused):
    """A file a teammate made that the namespace's owner has not accepted."""

    status = 403


def fork_made(session: Session, user: Any) -> None:
    """Record that `user` (None: no user, a command) made `session` on the hub."""
    if not session.namespace:
        return  # a machine's own fork: its own disk
    maker = user if getattr(user, "pk", None) is not None else None
    HubFork.objects.update_or_create(session=session, defaults={"made_by": maker})


def why_held(namespace: HubNamespace, made: HubFork | None) -> str | None:
    """Why the file `made` stays on the hub (None: it goes to the machine)."""
    if made is not None and (made.accepted_at is not None or made.made_by_id == namespace.user_id):
        return None
    if made is None or made.made_by is None:
        who = "made on the hub by no known user"
    else:
        who = f"made by {made.made_by.get_username()}"
    return f"{who}; it is written here only once you accept it"


def forks_of(namespace: HubNamespace) -> dict[int, HubFork]:
    """The namespace's files made on the hub, by their session's key."""
    made = HubFork.objects.filter(session__namespace=namespace.name).select_related("made_by")
    return {m.session_id: m for m in made}


def maker_name(made: HubFork | None) -> str:
    return made.made_by.get_username() if made is not None and made.made_by else ""


def accept(namespace: HubNamespace, session_id: str) -> Session:
    """The namespace's owner lets the file made on the hub as `session_id` go to the machine.

    The caller is the owner: a hub request reaches a namespace only with its owner's token.
    """
    try:
        key = uuid.UUID(session_id)
    except ValueError:
        raise PushRefused(f"{session_id!r} is not a session id (a UUID)") from None
    session = Session.objects.filter(namespace=namespace.name, session_id=key).first()
    if session is None:
        raise PushRefused(f"no session {session_id} of {namespace.name} on the hub")
    if _pushed(namespace, session):
        raise PushRefused(f"session {session_id} was pushed by {namespace.name}: it is yours")
    made, _ = HubFork.objects.get_or_create(session=session, defaults={"made_by": None})
    if made.accepted_at is None:
        made.accepted_at = timezone.now()
        made.save(update_fields=["accepted_at"])
    return session


def may_be_pulled(namespace: HubNamespace, path: str) -> None:
    """Refuse the file at `path` when the hub made it and the namespace's owner neither
    made nor accepted it; a file the machine pushed is its own."""
    if namespace.files.filter(path=path).exists():
        return
    _, target = target_of(namespace, path)
    session = Session.objects.filter(namespace=namespace.name, path=str(target)).first()
    if session is None:
        return  # no session: the hub holds no such file, said by the caller
    made = HubFork.objects.filter(session=session).select_related("made_by").first()
    reason = why_held(namespace, made)
    if reason is not None:
        raise NotAccepted(f"session {session.session_id}: {reason}")


def _pushed(namespace: HubNamespace, session: Session) -> bool:
    try:
        inside = Path(session.path).relative_to(namespace_folder(namespace.name)).as_posix()
    except ValueError:
        return False
    return namespace.files.filter(path=inside).exists()
