"""Numbering a branch: its turns by the one rule, its side branches active or abandoned."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..formats import LOCAL_OUTPUT
from .nodes import AbandonedBranch, Node
from .turns import is_turn_start
from .walks import conversation_time, subtree


@dataclass(slots=True)
class Numbering:
    """Turn and active flag per node index, filled in as a branch is walked."""

    turn: list[int | None]
    active: list[bool]
    current: int = 0  # turns counted so far
    prompt_lines: list[int] = field(default_factory=list)
    abandoned: list[AbandonedBranch] = field(default_factory=list)


def number_path(
    nodes: Sequence[Node],
    path: Sequence[int],
    children: dict[int, list[int]],
    parent: list[int],
    numbering: Numbering,
    *,
    on_path: set[int],
    numbered_first: bool = False,
) -> None:
    """Number the turns along `path` and place the side branches hanging off it.

    `numbered_first`: the first node of `path` was numbered by an earlier walk (the
    active leaf an append continues from); only its side branches are placed.
    """

    def answered_locally(i: int) -> bool:
        return any(nodes[c].kind == LOCAL_OUTPUT for c in children.get(i, ()))

    for k, i in enumerate(path):
        if not (numbered_first and k == 0):
            if is_turn_start(nodes[i], answered_locally=answered_locally(i)):
                numbering.current += 1
                numbering.prompt_lines.append(i)
            numbering.active[i] = True
            numbering.turn[i] = numbering.current or None
        for child in children.get(i, ()):
            if child not in on_path:
                _place_side(nodes, child, children, parent, numbering, answered_locally)


def _place_side(
    nodes: Sequence[Node],
    top: int,
    children: dict[int, list[int]],
    parent: list[int],
    numbering: Numbering,
    answered_locally: Callable[[int], bool],
) -> None:
    """Place the subtree under `top`, a side branch of the numbered path.

    Each branch in it goes to its newest leaf (as the CLI would resume it): with a
    prompt on the way it was left by a rewind (abandoned, its records unnumbered);
    without one (progress records, parallel tool results, hook output) it is part of
    the current turn, and the branches hanging off it are placed the same way.
    """
    current = numbering.current
    best = _newest_leaf_below(nodes, top, children, parent)
    pending = deque([top])
    while pending:
        start = pending.popleft()
        path = [start]
        while kids := [c for c in children.get(path[-1], ()) if c in best]:
            path.append(max(kids, key=best.__getitem__))
        prompts = [j for j in path if is_turn_start(nodes[j], answered_locally=answered_locally(j))]
        if prompts:
            numbering.abandoned.append(
                AbandonedBranch(
                    at_turn=current + 1,
                    turns=len(prompts),
                    first_line=nodes[start].line,
                    leaf_uuid=nodes[path[-1]].uuid,
                    prompt=nodes[prompts[0]].text or "",
                )
            )
            continue
        on_branch = set(path)
        for j in path:
            numbering.active[j] = True
            numbering.turn[j] = current or None
            pending.extend(c for c in children.get(j, ()) if c in best and c not in on_branch)


def _newest_leaf_below(
    nodes: Sequence[Node], top: int, children: dict[int, list[int]], parent: list[int]
) -> dict[int, tuple]:
    """For each node under `top`, the rank (time, index) of the newest leaf below it."""
    best: dict[int, tuple] = {}
    for i in reversed(subtree(top, children)):  # children before their parents
        below = [best[c] for c in children.get(i, ()) if c in best]
        best[i] = max(below) if below else (conversation_time(nodes, i, parent), i)
    return best


def place_outside(
    nodes: Sequence[Node], numbering: Numbering, start: int, current_turn: int | None
) -> None:
    """From `start` on, records outside the graph (bookkeeping, sidechains) join their turn.

    `current_turn`: the turn of the last active record before `start`.
    """
    turn, active = numbering.turn, numbering.active
    for i in range(start, len(nodes)):
        if active[i]:
            current_turn = turn[i]
        elif turn[i] is None and (nodes[i].sidechain or not nodes[i].uuid):
            turn[i] = current_turn
