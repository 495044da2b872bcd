"""Edit & fork before turn 1: there is nothing before it to keep, so no session is made.

A fork before turn N keeps turns 1..N-1 and hands prompt N back for editing. For
N = 1 that would be a session with no conversation in it, which the CLIs cannot
resume; the honest answer is prompt 1 to edit and the command that starts a new
session in the same folder. Every edge (page, API, command) asks this module
whenever it is given "before turn 1". Nothing is written, so no guard but the turn's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Session
from ..resume import fresh_command
from .branching import InvalidTurn
from .reading.prompts import turn_prompt_text

TURN = 1


@dataclass(frozen=True, slots=True)
class FreshStart:
    """What to do instead of a fork before turn 1: edit `prompt`, send it after `command`."""

    prompt: str
    command: str
    turn: int = TURN


def fresh_start(*, session: Session) -> FreshStart:
    """Prompt 1 of `session` and the command that starts a new session where it ran."""
    if session.turn_count < TURN:
        raise InvalidTurn(f"session {session.session_id} has no turns; there is no prompt to edit")
    return FreshStart(prompt=turn_prompt_text(session, TURN), command=fresh_command(session))
