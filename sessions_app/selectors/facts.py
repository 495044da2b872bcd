"""Facts about one session: its summary, turns and their prompts, what can be undone or edited."""

from __future__ import annotations

from pathlib import Path

from ..models import Session
from ..resume import resume_command
from ..services.reading.prompts import turn_prompt_text


def session_summary(session: Session) -> dict:
    """What scripts need to know about a session, as plain data."""
    return {
        "session_id": str(session.session_id),
        # How URLs, the API and the commands name it: the id, after `user@machine/` on a
        # hub (where the same id may come from two machines).
        "ref": session.ref,
        "namespace": session.namespace,
        "path": session.path,
        "title": session.title,
        "agent": session.agent,
        "turns": session.turn_count,
        "parent_id": str(session.parent.session_id) if session.parent else None,
        "parent_ref": session.parent.ref if session.parent else None,
        "kind": session.kind or "original",
        "turn": session.fork_turn,
        "resume_command": resume_command(session),
    }


def turn_list(session: Session) -> list[dict]:
    """Every turn of the active branch with its prompt text (bounded) and time."""
    rows = (
        session.records.active()
        .turn_starts()
        .order_by("line")
        .values_list("turn", "text", "timestamp", "uuid")
    )
    seen: set[int] = set()
    turns = []
    for turn, text, timestamp, record_uuid in rows:
        if turn is None or turn in seen:
            continue
        seen.add(turn)
        turns.append(
            {
                "turn": turn,
                "prompt": text,
                "timestamp": timestamp.isoformat() if timestamp else None,
                "uuid": record_uuid,
            }
        )
    return turns


def undo_available(session: Session) -> bool:
    """Whether the last rewind can still be undone: the file is as the rewind left it."""
    state = session.rewind_undo or {}
    if not state:
        return False
    try:
        # lstat: a link put in the file's place is not the file the rewind left.
        stat = Path(session.path).lstat()
    except OSError:
        return False
    return (stat.st_size, stat.st_mtime_ns) == (state.get("size"), state.get("mtime_ns"))


def edit_prompt(session: Session) -> str | None:
    """For an edit & fork not yet carried on: the prompt it was cut before, to edit."""
    if session.kind != Session.Kind.FORK_BEFORE or session.parent is None or not session.fork_turn:
        return None
    if session.turn_count != session.fork_turn - 1:
        return None
    return turn_prompt_text(session.parent, session.fork_turn)


def abandoned_after(session: Session) -> list[dict]:
    """The abandoned branches that split off after the session's last turn.

    Turn N of a branch left by a rewind inside the CLI is the prompt typed instead, which
    the page shows it at; a Qwen or Gemini rewind from the page (a `system/rewind` record,
    a `$rewindTo` line) leaves its turns with no such prompt yet: N is past the last turn.
    """
    return [b for b in session.abandoned or [] if (b.get("at_turn") or 0) > session.turn_count]
