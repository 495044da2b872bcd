"""How a session is named in URLs and commands: its id, or `user@machine/<id>` on a hub.

On a team hub the same session id may arrive from two machines (a home folder copied
from one to the other); each is its own session in its own namespace, so a page's
address names the namespace too. A session of this machine's own disk has none, and
its address is its id alone, as it always was.
"""

from __future__ import annotations

import re
import uuid

# `user@machine`: letters, digits, `.`, `_`, `-` on each side; no leading dot or dash.
NAMESPACE_PART = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}"
# Matched in full (`fullmatch`): `$` would take a name ending in a line break.
NAMESPACE_RE = re.compile(rf"{NAMESPACE_PART}@{NAMESPACE_PART}")
UUID_PART = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
REF_PATTERN = rf"(?:{NAMESPACE_PART}@{NAMESPACE_PART}/)?{UUID_PART}"
REF_RE = re.compile(REF_PATTERN)


class BadRef(ValueError):
    """Not a session id, nor `user@machine/<id>`."""


def is_namespace(name: str) -> bool:
    """Whether `name` is a well-formed `user@machine` namespace."""
    return bool(NAMESPACE_RE.fullmatch(name)) and ".." not in name


def session_ref(namespace: str, session_id: uuid.UUID | str) -> str:
    """The session's name in URLs and commands."""
    return f"{namespace}/{session_id}" if namespace else str(session_id)


def ref_parse(ref: str) -> tuple[str, uuid.UUID]:
    """(namespace, id) of a ref; raises BadRef."""
    if not REF_RE.fullmatch(ref):
        raise BadRef(f"{ref!r} is not a session id (a UUID), nor user@machine/<id>")
    namespace, _, sid = ref.rpartition("/")
    if namespace and not is_namespace(namespace):
        raise BadRef(f"{namespace!r} is not a namespace (user@machine)")
    return namespace, uuid.UUID(sid)


class SessionRefConverter:
    """The `<sref:...>` path converter: a session's ref, as a string."""

    regex = REF_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: object) -> str:
        return str(value)
