"""Walks over parent links: the leaf the CLI resumes from, paths, subtrees; a cycle ends a walk."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ..formats import CONVERSATION_KINDS, LAST_RECORD, agent_for
from .nodes import Node

NO_TIME = datetime.min.replace(tzinfo=UTC)


def choose_leaf(
    nodes: Sequence[Node],
    index: dict[str, int],
    parent: list[int],
    children: dict[int, list[int]],
    agent: str,
    leaf_uuid: str | None,
) -> int:
    """The leaf of the branch to number: `leaf_uuid`'s, else where the agent's CLI resumes."""
    if leaf_uuid is not None:
        return index.get(leaf_uuid, -1)
    if agent_for(agent).leaf_rule == LAST_RECORD:
        # Qwen resumes from the last record in the file (a rewind appends a marker).
        return max(index.values(), default=-1)
    return latest_leaf(nodes, list(index.values()), children, parent)


def latest_leaf(
    nodes: Sequence[Node], candidates: list[int], children: dict[int, list[int]], parent: list[int]
) -> int:
    """Claude Code's rule: the leaf whose nearest conversation record is newest."""
    best, best_key = -1, (NO_TIME, -1)
    for i in candidates:
        if children.get(i):
            continue
        key = (conversation_time(nodes, i, parent), i)
        if key > best_key:
            best, best_key = i, key
    return best


def rival_time(
    nodes: Sequence[Node],
    candidates: list[int],
    children: dict[int, list[int]],
    parent: list[int],
    leaf: int,
) -> datetime:
    """The time of the newest leaf among `candidates` other than `leaf` (`NO_TIME` if none)."""
    times = [
        conversation_time(nodes, i, parent) for i in candidates if i != leaf and not children.get(i)
    ]
    return max(times, default=NO_TIME)


def conversation_time(nodes: Sequence[Node], i: int, parent: list[int]) -> datetime:
    """The time Claude Code ranks leaf `i` by: that of its nearest conversation record."""
    # Walk up to the nearest user/assistant record; a leaf of progress records
    # must not win over the conversation's real end.
    for _ in range(1000):
        if i < 0:
            break
        if nodes[i].kind in CONVERSATION_KINDS:
            return nodes[i].timestamp or NO_TIME
        i = parent[i]
    return NO_TIME


def path_to(leaf: int, parent: list[int]) -> list[int]:
    """Root-to-leaf list of indexes; a cycle in a damaged file ends the walk."""
    path: list[int] = []
    seen: set[int] = set()
    i = leaf
    while i >= 0 and i not in seen:
        seen.add(i)
        path.append(i)
        i = parent[i]
    path.reverse()
    return path


def subtree(top: int, children: dict[int, list[int]]) -> list[int]:
    """`top` and everything below it, each node before its children; a cycle ends the walk."""
    out: list[int] = []
    stack = [top]
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        out.append(i)
        stack.extend(children.get(i, ()))
    return out
