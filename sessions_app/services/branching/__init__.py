"""Branch, fork and rewind sessions, and undo a rewind: the only code that writes session files.

Every new session is a new file beside its source, shaped like the CLI's own
branch; every write goes to a temporary file that is indexed and read back before
it is linked or renamed into place. The source file is only ever changed by a
rewind, and a Claude Code rewind first saves the whole old file as a backup.

Modules, one rule each: `guards` (checks before any write; what a refusal says is
`services.errors`, below every package that writes), `titles`, `copying` (streamed, each
record checked against the index), `kept` (what the copy wrote for each kept source
row), `readback` (a fork read back from its temporary file against the rows it will
get), `deriving` (a fork's index derived from its source's rows in SQL), `registering`
(index a written file from scratch and check it reads back: rewinds, and forks the read-
back cannot vouch for), `forking`, `reviving` (a branch an in-CLI rewind left, as a fork
brings it back), `rewinding` (rewind and undo). Which records a cut keeps is
`formats.shape`.
"""

from __future__ import annotations

import uuid  # noqa: F401 (tests replace uuid.uuid4 through this name)
from collections.abc import Iterator
from contextlib import contextmanager

from ...models import Session
from ...session_refs import BadRef, ref_parse
from ..errors import (
    BranchError,
    BranchingUnsupported,
    FileUnreadable,
    InvalidSessionId,
    InvalidTurn,
    NothingToUndo,
    OutsideRoots,
    PushedReadOnly,
    SessionBusy,
    SourceChanged,
    StaleIndex,
    TargetExists,
    UnknownSession,
    WriteCheckFailed,
    check_not_pushed,
)
from .forking import Elsewhere, fork
from .guards import (
    branching_refusal,
    check_can_branch,
    check_can_rewind,
    check_not_busy,
    check_on_disk,
    check_paths,
    check_readable,
    check_turn,
    check_unchanged,
    rewind_refusal,
)
from .registering import caught_up, reindex
from .rewinding import rewind, undo

__all__ = [
    "BranchError",
    "BranchingUnsupported",
    "Elsewhere",
    "FileUnreadable",
    "InvalidSessionId",
    "InvalidTurn",
    "NothingToUndo",
    "OutsideRoots",
    "PushedReadOnly",
    "SessionBusy",
    "SourceChanged",
    "TargetExists",
    "UnknownSession",
    "WriteCheckFailed",
    "branching_refusal",
    "check_can_branch",
    "refusing_on_stale",
    "rewind_refusal",
    "session_fork",
    "session_lookup",
    "session_rewind",
    "session_rewind_check",
    "session_rewind_undo",
]


def session_lookup(*, ref: str) -> Session:
    """The listed session `ref` names: its id (a UUID), or `user@machine/<id>` on a hub."""
    try:
        namespace, session_id = ref_parse(ref)
    except BadRef:
        raise InvalidSessionId(f"{ref!r} is not a session id (a UUID)") from None
    sessions = Session.objects.listed().filter(namespace=namespace, session_id=session_id)
    session = sessions.select_related("project").first()
    if session is None:
        raise UnknownSession(f"no session {ref}; import it first (manage.py import_sessions)")
    return session


@contextmanager
def refusing_on_stale(session: Session) -> Iterator[None]:
    """A stale index or an unreadable file becomes a refusal; a stale index is re-imported."""
    try:
        yield
    except StaleIndex:
        # The action's own transaction has rolled back; the re-import is kept.
        try:
            reindex(session, full=True)
        except BranchError as exc:
            raise SourceChanged(f"{session.path} changed on disk and {exc}") from None
        raise SourceChanged(
            f"session {session.session_id} changed on disk since it was imported; "
            "it has been re-imported, try again"
        ) from None
    except OSError as exc:
        raise FileUnreadable(
            f"{exc.filename or session.path}: {exc.strerror or exc}; nothing was written"
        ) from None


def session_fork(
    *,
    session: Session,
    turn: int | None = None,
    include_turn: bool = True,
    title: str | None = None,
    elsewhere: Elsewhere | None = None,
    leaf: str | None = None,
) -> Session:
    """Copy turns 1..turn (1..turn-1 with include_turn=False; all without turn) to a new session;
    with `leaf`, the abandoned branch ending at that record (its turns, shared ones too).

    `elsewhere`: the new session goes on in another folder (see `Elsewhere`).
    """
    with refusing_on_stale(session):
        new = fork(session, turn, include_turn, title, elsewhere, leaf=leaf)
    caught_up(session, new)
    return new


def session_rewind_check(*, session: Session, turn: int) -> None:
    """The refusals a rewind to `turn` meets before it reads the file (its confirmation's)."""
    check_not_pushed(session, "a rewind")
    check_paths(session)
    check_can_rewind(session)
    check_on_disk(session)
    check_turn(session, turn, lowest=2)


def session_rewind(*, session: Session, turn: int) -> Session:
    """Rewind the session in place so that the CLI resumes after turn `turn - 1`."""
    with refusing_on_stale(session):
        session_rewind_check(session=session, turn=turn)
        check_readable(session)
        check_unchanged(session)
        check_not_busy(session)
        rewound = rewind(session, turn)
    caught_up(rewound, _backup_of(rewound))
    return rewound


def _backup_of(session: Session) -> Session | None:
    """The backup session a rewind kept of the whole old file (Claude Code, Codex), if any."""
    backup_id = (session.rewind_undo or {}).get("backup_id")
    if not backup_id:
        return None
    return Session.objects.filter(session_id=backup_id, namespace=session.namespace).first()


def session_rewind_undo(*, session: Session) -> Session:
    """Undo the last rewind: Qwen Code's file gets a record appended that brings the turns
    back (its file keeps growing); Gemini CLI's loses the `$rewindTo` line the rewind added;
    Claude Code's and Codex's file is rebuilt byte for byte."""
    with refusing_on_stale(session):
        check_not_pushed(session, "an undo")
        check_paths(session)
        check_can_rewind(session)
        check_on_disk(session)
        restored = undo(session)
    caught_up(restored)
    return restored
