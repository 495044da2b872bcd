"""A branch an in-CLI rewind left behind, as a fork can bring it back: its records and prompts."""

from __future__ import annotations

from dataclasses import dataclass

from ...models import Session
from ..errors import InvalidTurn
from ..reading.branches import abandoned_branch
from .copying import intended_prompts


@dataclass(frozen=True)
class Revived:
    """What a fork keeps to make an abandoned branch a session's active branch."""

    leaf: str  # the branch's last record
    split: int  # the active branch's turn it split off after (its turns 1..split are shared)
    turns: int  # its turns, shared ones included
    lines: frozenset[int]  # the records kept: the shared turns', then the branch's own
    prompts: list[str]  # the prompt of each of its turns, as the index holds them


def revived_branch(session: Session, leaf: str) -> Revived:
    """The abandoned branch of `session` that ends at record `leaf`; `InvalidTurn` if none does."""
    branch = abandoned_branch(session, leaf)
    if branch is None:
        raise InvalidTurn(
            f"session {session.session_id} has no abandoned branch ending at {leaf!r}; "
            "nothing was written"
        )
    active = session.records.active().filter(sidechain=False)
    first = min(branch.rows, default=0)
    lines = set(active.filter(turn__lte=branch.shared).values_list("line", flat=True))
    # What the CLI wrote before the first prompt belongs to every branch.
    lines.update(active.filter(turn=None, line__lt=first).values_list("line", flat=True))
    lines.update(line for line, (_turn, on) in branch.rows.items() if on)
    texts = dict(session.records.filter(line__in=branch.starts).values_list("line", "text"))
    prompts = intended_prompts(session, cut=branch.shared) + [
        texts.get(line, "") for line in branch.starts
    ]
    entry = next(b for b in session.abandoned if b.get("leaf_uuid") == leaf)
    split = max(int(entry.get("at_turn") or 1) - 1, 0)
    return Revived(leaf, split, branch.turns, frozenset(lines), prompts)
