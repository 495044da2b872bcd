"""The checks every action passes before it writes anything."""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.conf import settings

from ...formats import ASSISTANT, COMMAND, PROMPT, TOOL_RESULT, agent_for
from ...formats.documents import is_document
from ...models import Session
from ..archive import archive_covers, session_open
from ..errors import (
    BranchingUnsupported,
    FileUnreadable,
    InvalidTurn,
    OutsideRoots,
    SessionBusy,
    SourceChanged,
    StaleIndex,
)
from ..process_groups import alive
from ..roots import UnsafePath, check_inside
from .copying import read_record


def branching_refusal(agent_name: str) -> str:
    """Why sessions of this agent are not branched here ("" when they are): the pages show it."""
    agent = agent_for(agent_name)
    if agent.can_branch:
        return ""
    return (
        f"{agent.label.removesuffix(' CLI')} sessions can be read, searched and priced "
        "here; branching them is not supported yet"
    )


def check_can_branch(session: Session) -> None:
    """The session's agent offers branch, fork, rewind, undo, worktrees and runs."""
    refusal = branching_refusal(session.agent)
    if refusal:
        raise BranchingUnsupported(refusal)


def check_can_rewind(session: Session) -> None:
    """The session's agent offers rewind and its undo (`Agent.can_rewind`)."""
    check_can_branch(session)
    agent = agent_for(session.agent)
    if agent.documents is not None and is_document(agent.documents, Path(session.path)):
        raise BranchingUnsupported(agent.documents.refusal)  # an older release's one document
    if not agent.can_rewind:
        raise BranchingUnsupported(
            f"{agent.label.removesuffix(' CLI')} sessions can be branched and forked here; "
            "rewinding them is not supported yet (fork before the turn instead)"
        )


def check_paths(session: Session) -> None:
    """The session file lies in its project folder under its root, and is no link."""
    # Asked first by every action, so an agent that cannot branch is told so plainly.
    check_can_branch(session)
    agent = agent_for(session.agent)
    path = Path(session.path)
    # A file gone is read from the archive (branch and fork write a new file beside it).
    if not os.path.lexists(path) and not archived_only(session):
        raise SourceChanged(f"{path} no longer exists; re-import first")
    try:
        check_inside(path, session.project.root)
        if not agent.sessions_root:
            # A dated layout (Codex) names the project inside the file, not by a folder.
            check_inside(path, session.project.folder)
    except UnsafePath as exc:
        raise OutsideRoots(f"{exc}; refusing to read or write near it") from None
    # A name that holds part of the id (Gemini CLI): the file's first line names it.
    named_inside = agent.sessions_root or agent.head_session_id is not None
    named_id = agent.session_id_of(path)
    if named_id is None and agent.head_session_id is not None and not os.path.lexists(path):
        # Gone, read from the archive: the name holds the id's first 8 characters at its end.
        short = str(session.session_id).lower()[:8]
        named = agent.is_session_path(path.relative_to(session.project.root))
        named_id = str(session.session_id).lower() if named and path.stem.endswith(short) else None
    if named_id != str(session.session_id).lower() or (
        not named_inside and path.name != f"{session.session_id}.jsonl"
    ):
        raise OutsideRoots(f"{path} is not named after its session; refusing to write near it")


def check_turn(session: Session, turn: int, *, lowest: int) -> None:
    """`turn` is a whole number within the session's turns, from `lowest` on."""
    if isinstance(turn, bool) or not isinstance(turn, int):
        raise InvalidTurn(f"turn must be a whole number, not {turn!r}")
    if session.turn_count < lowest:
        raise InvalidTurn(
            f"session {session.session_id} has {session.turn_count} "
            f"turn{'' if session.turn_count == 1 else 's'}; "
            f"this needs a turn from {lowest} on"
        )
    if not lowest <= turn <= session.turn_count:
        raise InvalidTurn(
            f"turn {turn} is out of range: session {session.session_id} has turns "
            f"1..{session.turn_count}" + (" and this needs turn 2 or later" if lowest == 2 else "")
        )


def file_stat(session: Session) -> os.stat_result:
    """The session file's own stat (a link is not followed)."""
    try:
        return os.lstat(session.path)
    except FileNotFoundError:
        raise SourceChanged(f"{session.path} no longer exists; re-import first") from None


def check_unchanged(session: Session) -> None:
    """The file is exactly as it was indexed (or gone and archived whole); else the index
    is stale."""
    if archived_only(session):
        return  # the archive holds exactly the bytes indexed; each record read is checked
    st = file_stat(session)
    indexed = (session.file_size, session.file_mtime_ns, session.file_inode)
    if (st.st_size, st.st_mtime_ns, st.st_ino) != indexed:
        raise StaleIndex(session.path)


def check_readable(session: Session) -> None:
    """Say plainly when the file cannot be read, rather than failing halfway."""
    try:
        session_open(session).close()
    except UnsafePath as exc:
        raise FileUnreadable(f"{exc}; nothing was written") from None
    except OSError as exc:
        raise FileUnreadable(
            f"{session.path}: cannot read ({exc.strerror}); check its permissions. "
            "Nothing was written"
        ) from None


def archived_only(session: Session) -> bool:
    """The session's file is gone and the archive holds every byte it was indexed from."""
    return not os.path.lexists(session.path) and archive_covers(session)


def _removed(session: Session) -> str:
    removed = session.file_removed_at
    when = f" on {removed:%Y-%m-%d}" if removed else ""
    return (
        f"the file of session {session.session_id} was removed{when}: there is no file "
        "to rewind. Restore it to disk first, or branch or fork it (that writes a new file)"
    )


def check_on_disk(session: Session) -> None:
    """A rewind changes the file itself: refused for a session only the archive holds."""
    if archived_only(session):
        raise SourceChanged(_removed(session))


def rewind_refusal(session: Session) -> str:
    """Why a page offers no rewind of `session`: its file is not on disk (removed, perhaps
    since the last import); "" when a rewind may be tried."""
    return "" if os.path.lexists(session.path) else _removed(session)


def own_write(st: os.stat_result) -> dict:
    """What `Session.own_write` keeps of a file the dashboard just wrote."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def check_not_busy(session: Session) -> None:
    """Refuse while a CLI may still be writing the session (not when we wrote it last)."""
    running = session.runs.filter(ended_at__isnull=True).first()
    if running is not None and alive(running.pid, running.pid_start):
        raise SessionBusy(
            f"run {running.pk} of {running.actor} is carrying session {session.session_id} on "
            "in its CLI; stop it or wait for it to end"
        )
    st = file_stat(session)
    ours = session.own_write == own_write(st)
    age = time.time() - st.st_mtime
    if not ours and age < settings.BRANCHBOARD_BUSY_SECONDS:
        raise SessionBusy(
            f"session {session.session_id} was written {age:.1f}s ago; a CLI may still be "
            "running in it. Wait until it is idle and try again"
        )
    last = (
        session.records.filter(active=True, kind__in=[ASSISTANT, TOOL_RESULT, PROMPT, COMMAND])
        .order_by("-line")
        .values_list("offset", "length", "kind", "digest")
        .first()
    )
    if last and last[2] == ASSISTANT and _has_tool_call(read_record(session, *last[:2], last[3])):
        raise SessionBusy(
            f"session {session.session_id} ends with a tool call that has no result; "
            "a CLI may still be running in it"
        )


def _has_tool_call(raw: bytes) -> bool:
    return b'"type":"tool_use"' in raw or b'"functionCall"' in raw
