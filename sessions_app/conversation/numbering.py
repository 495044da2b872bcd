"""Numbering a branch: its turns by the one rule, its side branches active or abandoned."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..formats import LOCAL_OUTPUT
from .nodes import AbandonedBranch, Node
from .turns import is_turn_start
from .walks import latest_leaf, path_between, walk_subtree


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
        current = numbering.current
        for child in children.get(i, ()):
            if child in on_path:
                continue
            branch = walk_subtree(child, children)
            branch_leaf = latest_leaf(nodes, branch, children, parent)
            branch_path = path_between(child, branch_leaf, parent)
            prompts = [
                j
                for j in branch_path
                if is_turn_start(nodes[j], answered_locally=answered_locally(j))
            ]
            if prompts:
                numbering.abandoned.append(
                    AbandonedBranch(
                        at_turn=current + 1,
                        turns=len(prompts),
                        first_line=nodes[child].line,
                        leaf_uuid=nodes[branch_leaf].uuid,
                        prompt=nodes[prompts[0]].text or "",
                    )
                )
                continue
            # Progress records, parallel tool results, hook output: part of this turn.
            for j in branch:
                numbering.active[j] = True
                numbering.turn[j] = current or None


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
