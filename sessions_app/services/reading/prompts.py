"""The full text of a turn's prompt, read from the session file (or its archive)."""

from __future__ import annotations

import orjson

from ...formats import agent_for
from ...models import Session
from ..archive import session_open
from ..roots import UnsafePath
from .lines import record_line


def turn_prompt_text(session: Session, turn: int) -> str:
    """The full text of the prompt that starts `turn`, read from the session file."""
    record = (
        session.records.active()
        .turn_starts()
        .filter(turn=turn)
        .order_by("line")
        .values_list("offset", "length", "text")
        .first()
    )
    if record is None:
        return ""
    offset, length, text = record
    try:
        with session_open(session) as f:
            data = orjson.loads(record_line(f, offset, length) or b"")
    except (OSError, UnsafePath, orjson.JSONDecodeError):
        return text
    agent = agent_for(session.agent)
    return agent.record_text(data) if isinstance(data, dict) else text
