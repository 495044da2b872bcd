"""An append that only continues the active branch, numbered without reading the rest.

Appended records usually hang off the active leaf: then the stored graph keeps
every turn and flag it had, and the new records are numbered from the leaf on, by
the same walk `analyse` uses. `extend` decides that from the leaf and its nearest
ancestors alone and gives up (returns None) on anything else: a parent elsewhere
(a rewind inside the CLI), a new root or compaction boundary, a rewind marker, a
newest leaf that may not be the new one, a uuid seen twice. The caller then
analyses the whole graph; both must give the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..formats import COMMAND, COMPACT_BOUNDARY, LAST_RECORD, LOCAL_OUTPUT, REWIND, agent_for
from .nodes import AbandonedBranch, Node
from .numbering import Numbering, number_path, place_outside
from .walks import conversation_time, latest_leaf


@dataclass(slots=True)
class Tip:
    """What the stored graph contributes to an append: the active leaf and its facts."""

    # The active leaf first, then its parents up to its nearest conversation record
    # (or the root): everything Claude Code's newest-leaf rule reads above the leaf.
    chain: list[Node]
    turn_count: int  # turns of the active branch, ending at the leaf
    last_active_turn: int | None  # turn of the last active record in file order
    # Claude Code's rule: the time of the newest stored leaf other than the active one
    # (`NO_TIME` if none), which a new leaf must reach to win; None: not known, then
    # the new leaf must reach the active leaf's own time.
    rival: datetime | None = None


@dataclass(slots=True)
class Extension:
    """Per appended record (in file order) its turn, flags; and the session's new facts."""

    turn: list[int | None]
    active: list[bool]
    starts_turn: list[bool]
    turn_count: int
    leaf_uuid: str
    abandoned: list[AbandonedBranch] = field(default_factory=list)  # new ones only
    rival: datetime | None = None  # `Tip.rival` after the append


def graph_uuids(new: Sequence[Node]) -> list[str]:
    """The uuids appended records bring into the graph (sidechains stay outside it)."""
    return [n.uuid for n in new if n.uuid and not n.sidechain]


def dangling_parents(nodes: Sequence[Node]) -> set[str]:
    """The (logical) parent uuids `nodes` name, outside sidechains, that none of them has.

    A later record with one of these uuids changes the graph above records already
    numbered, so an append that brings one is analysed whole.
    """
    own: set[str] = set()
    named: set[str] = set()
    for node in nodes:
        if node.sidechain:
            continue
        if node.uuid:
            own.add(node.uuid)
        if node.parent_uuid:
            named.add(node.parent_uuid)
        if node.logical_parent_uuid:
            named.add(node.logical_parent_uuid)
    return named - own


def extend(tip: Tip, new: Sequence[Node], agent: str) -> Extension | None:
    """The active branch continued by `new`, or None when the whole graph must be analysed.

    The caller has checked that no stored record (outside sidechains) has the uuid
    of a new one or names one as its parent: the stored graph is then unchanged.
    """
    chain = tip.chain
    if not chain or not chain[0].uuid:
        return None
    leaf_node = chain[0]
    # The window: the leaf's ancestors (top first), the leaf, then the new records.
    window: list[Node] = [*reversed(chain), *new]
    top = len(chain)
    leaf = top - 1
    parent = [-1] * len(window)
    for j in range(1, top):
        parent[j] = j - 1
    children: dict[int, list[int]] = {}
    index: dict[str, int] = {}
    graph: list[int] = []
    for j in range(top, len(window)):
        node = window[j]
        if node.kind in (REWIND, COMPACT_BOUNDARY):
            return None
        if node.sidechain or not node.uuid:
            continue
        if node.uuid in index or node.uuid == leaf_node.uuid:
            return None  # a uuid twice: only its first record is in the graph
        index[node.uuid] = j
        graph.append(j)
    for j in graph:
        node = window[j]
        if not node.parent_uuid:
            return None  # a new root, or a compaction boundary's logical parent
        p = leaf if node.parent_uuid == leaf_node.uuid else index.get(node.parent_uuid, -1)
        if p < 0 or p == j:
            return None  # a parent elsewhere in the stored graph, or none
        parent[j] = p
        children.setdefault(p, []).append(j)
    if not _all_reach(graph, leaf, parent):
        return None
    if leaf_node.kind == COMMAND and any(
        window[c].kind == LOCAL_OUTPUT for c in children.get(leaf, ())
    ):
        return None  # the leaf's command turns out answered locally: not a turn after all

    new_leaf = leaf
    rival = tip.rival
    if graph:
        if agent_for(agent).leaf_rule == LAST_RECORD:
            new_leaf = graph[-1]
        else:
            new_leaf = latest_leaf(window, graph, children, parent)
            # The stored leaf was the newest of the stored leaves, and it is one no
            # more; a new leaf at least as new as the others (ties go to the later
            # record) wins over all of them. Not knowing the others, it must reach the
            # stored leaf's time. The window holds every record these walks visit, so
            # the times are exact.
            new_time = conversation_time(window, new_leaf, parent)
            if new_time < (rival if rival is not None else conversation_time(window, leaf, parent)):
                return None
            if rival is not None:
                others = [
                    conversation_time(window, j, parent)
                    for j in graph
                    if j != new_leaf and not children.get(j)
                ]
                rival = max([rival, *others])
    path = [leaf]
    i = new_leaf
    while i != leaf:
        path.append(i)
        i = parent[i]
    path[1:] = reversed(path[1:])

    numbering = Numbering([None] * len(window), [False] * len(window), current=tip.turn_count)
    number_path(window, path, children, parent, numbering, on_path=set(path), numbered_first=True)
    place_outside(window, numbering, top, tip.last_active_turn)
    starts = set(numbering.prompt_lines)
    return Extension(
        turn=numbering.turn[top:],
        active=numbering.active[top:],
        starts_turn=[j in starts for j in range(top, len(window))],
        turn_count=numbering.current,
        leaf_uuid=window[new_leaf].uuid or "",
        abandoned=numbering.abandoned,
        rival=rival,
    )


def _all_reach(graph: list[int], leaf: int, parent: list[int]) -> bool:
    """Whether every new record's parents lead up to the stored leaf (no cycle, no root)."""
    reaches = {leaf}
    for j in graph:
        seen: set[int] = set()
        i = j
        while i not in reaches:
            if i < leaf or i in seen:
                return False
            seen.add(i)
            i = parent[i]
        reaches |= seen
    return True
