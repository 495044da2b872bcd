"""Reads for the pages: one function per page-sized question."""

from __future__ import annotations

import orjson
from django.db.models import Prefetch, QuerySet

from .formats import COMMAND, PROMPT, QWEN, claude, qwen
from .models import Project, Session
from .resume import resume_command


def projects_with_sessions(*, per_project: int = 20) -> QuerySet[Project]:
    """Projects by last activity, each with its most recent listed sessions."""
    recent = Session.objects.listed().order_by("-updated_at")
    return (
        Project.objects.filter(session_count__gt=0)
        .order_by("-last_activity", "folder")
        .prefetch_related(Prefetch("sessions", queryset=recent, to_attr="recent_sessions"))
    )


def turn_prompt_text(session: Session, turn: int) -> str:
    """The full text of the prompt that starts `turn`, read from the session file."""
    record = (
        session.records.filter(turn=turn, active=True, kind__in=[PROMPT, COMMAND])
        .order_by("line")
        .values_list("offset", "length", "text")
        .first()
    )
    if record is None:
        return ""
    offset, length, text = record
    try:
        with open(session.path, "rb") as f:
            f.seek(offset)
            data = orjson.loads(f.read(length))
    except (OSError, orjson.JSONDecodeError):
        return text
    reader = qwen if session.agent == QWEN else claude
    return reader.message_text(data.get("message")) if isinstance(data, dict) else text


def session_summary(session: Session) -> dict:
    """What scripts need to know about a session, as plain data."""
    return {
        "session_id": str(session.session_id),
        "path": session.path,
        "title": session.title,
        "agent": session.agent,
        "turns": session.turn_count,
        "parent_id": str(session.parent.session_id) if session.parent_id else None,
        "kind": session.kind or "original",
        "turn": session.fork_turn,
        "resume_command": resume_command(session),
    }
