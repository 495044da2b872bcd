"""The one place the inputs of branch, fork, edit & fork, rewind and undo are checked.

Pages, htmx actions, the JSON API and the management commands hand over what they
received (form strings, JSON values, command options) and get back a checked
value or a refusal in the same words, whichever door it came through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...models import TITLE_LIMIT
from ..errors import BranchError, InvalidTurn
from .titles import clean_title

LEAF_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class ForkInput:
    """A checked request for a branch (no turn), a fork (turn) or an edit & fork."""

    turn: int | None
    include_turn: bool
    title: str | None
    leaf: str | None = None  # bring back the abandoned branch ending at this record

    @property
    def fresh_start(self) -> bool:
        """Edit & fork of turn 1: nothing to keep, prompt 1 goes to a fresh session."""
        return not self.include_turn and self.turn == 1


def turn_input(value: object) -> int | None:
    """A turn number: a whole number (or its digits as text); None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.lstrip("-").isdigit() and len(text) <= 12:
            return int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        return value
    shown = repr(value[:40]) if isinstance(value, str) else repr(value)[:40]
    raise InvalidTurn(f"turn must be a whole number, not {shown}")


def flag_input(value: object, *, name: str, default: bool) -> bool:
    """A yes/no input: true or false, nothing that merely looks like one."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    raise BranchError(f"{name} must be true or false")


def title_input(value: object) -> str | None:
    """A title for the new session, cleaned; None for the default name."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > TITLE_LIMIT:
        raise BranchError(f"title must be text of at most {TITLE_LIMIT} characters")
    return clean_title(value) or None


def leaf_input(value: object) -> str | None:
    """The last record of an abandoned branch: a record uuid; None when absent (not empty)."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64 or not LEAF_RE.fullmatch(value):
        raise BranchError("leaf must be the uuid of a record (the end of an abandoned branch)")
    return value


def fork_input(
    *, turn: object = None, include_turn: object = True, title: object = None, leaf: object = None
) -> ForkInput:
    """The checked inputs of a branch, fork, edit & fork, or a brought-back branch."""
    include = flag_input(include_turn, name="include_turn", default=True)
    checked = turn_input(turn)
    if not include and checked is None:
        raise InvalidTurn("edit & fork needs a turn: the turn whose prompt to edit")
    end = leaf_input(leaf)
    if end is not None and (checked is not None or not include):
        raise BranchError("a branch brought back keeps all of its turns: give a leaf or a turn")
    return ForkInput(turn=checked, include_turn=include, title=title_input(title), leaf=end)


def rewind_input(*, turn: object) -> int:
    """The checked turn of a rewind."""
    checked = turn_input(turn)
    if checked is None:
        raise InvalidTurn("rewind needs a turn: the first turn to leave out")
    return checked
