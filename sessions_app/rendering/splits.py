"""Where a session split from its parent, named one way on every page.

`Session.fork_turn` stores what each action was given, and that differs by kind: the
turn kept (branch, fork), the turn whose prompt was handed back (edit & fork: turns
1..N-1 kept), the split of a branch brought back, the turn rewound to (the backup's
parent keeps 1..N-1). Pages name the last turn a session shares with its parent, the
turn the compare page finds by the prompts both hold, and the kind as the buttons and
titles say it: a "Branch from here" result is a branch, as its "(Branch)" title says.
"""

from __future__ import annotations

from ..models import Session

Kind = Session.Kind

# What a page calls each kind: a fork from a turn is a branch there, like the button
# that made it and the "(Branch)" title it got (Claude Code's `/branch` names).
KIND_LABELS: dict[str, str] = {
    Kind.ORIGINAL: "original",
    Kind.BRANCH: "branch",
    Kind.FORK: "branch",
    Kind.FORK_BEFORE: "edit & fork",
    Kind.REVIVED: "revived branch",
    Kind.REWIND_BACKUP: "rewind backup",
}
# Kinds whose `fork_turn` is the first turn not shared (edited, or rewound to).
_FIRST_NOT_SHARED = frozenset({Kind.FORK_BEFORE, Kind.REWIND_BACKUP})


def kind_label(session: Session) -> str:
    """What a badge calls the session's kind: "branch", "edit & fork", "rewind backup"..."""
    return KIND_LABELS.get(session.kind, session.kind or "original")


def last_shared_turn(session: Session) -> int | None:
    """The last turn `session` shares with its parent (0: none); None for an original or
    when it is not known (a CLI branch whose source was not read)."""
    if not session.kind or session.fork_turn is None:
        return None
    if session.kind in _FIRST_NOT_SHARED:
        return max(session.fork_turn - 1, 0)
    return session.fork_turn


def after_turn(turn: int | None) -> str:
    """A split named by its last shared turn: "after turn 2", "before any turn"; "" unknown."""
    if turn is None:
        return ""
    return f"after turn {turn}" if turn > 0 else "before any turn"


def split_label(session: Session) -> str:
    """Where `session` split from its parent: "after turn 2"; "" for an original."""
    return after_turn(last_shared_turn(session))
