"""The conversation graph of one session file: active branch, turns, abandoned branches.

Pure Python. Every place that counts turns goes through `analyse`, and `analyse`
decides what starts a turn with `is_turn_start` alone.

Modules, one rule each: `nodes` (a node per record, and what an analysis gives),
`turns` (the one turn rule, with Claude Code's built-in local commands), `walks`
(the leaf the CLI resumes from, paths and subtrees over the parent links),
`numbering` (a branch's turns numbered, its side branches placed), `extending`
(an append that only continues the active branch, numbered without the rest).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formats import CONVERSATION_KINDS, LAST_RECORD, agent_for
from .extending import Extension, Tip, dangling_parents, extend, graph_uuids
from .nodes import AbandonedBranch, Analysis, Node, node_from_record
from .numbering import Numbering, number_path, place_outside
from .turns import LOCAL_COMMANDS, is_turn_start
from .walks import choose_leaf, path_to, rival_time

__all__ = [
    "LOCAL_COMMANDS",
    "AbandonedBranch",
    "Analysis",
    "Extension",
    "Node",
    "Tip",
    "analyse",
    "dangling_parents",
    "extend",
    "graph_uuids",
    "is_turn_start",
    "node_from_record",
]


def analyse(nodes: Sequence[Node], agent: str, *, leaf_uuid: str | None = None) -> Analysis:
    """Find the active branch (or the branch ending at `leaf_uuid`) and number its turns."""
    count = len(nodes)
    index: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if node.uuid and not node.sidechain and node.uuid not in index:
            index[node.uuid] = i

    parent = [-1] * count
    children: dict[int, list[int]] = {}
    last_conversation = -1
    for i, node in enumerate(nodes):
        if node.sidechain or not node.uuid or index.get(node.uuid) != i:
            continue
        p = -1
        if node.parent_uuid:
            p = index.get(node.parent_uuid, -1)
        elif node.logical_parent_uuid:
            # A compaction boundary: its logical parent may be missing from the file;
            # then the history before it is whatever the main chain held last.
            p = index.get(node.logical_parent_uuid, last_conversation)
        if p >= 0 and p != i:
            parent[i] = p
            children.setdefault(p, []).append(i)
        if node.kind in CONVERSATION_KINDS:
            last_conversation = i

    leaf = choose_leaf(nodes, index, parent, children, agent, leaf_uuid)
    rival = None
    if leaf_uuid is None and agent_for(agent).leaf_rule != LAST_RECORD:
        rival = rival_time(nodes, list(index.values()), children, parent, leaf)
    path = path_to(leaf, parent)
    numbering = Numbering([None] * count, [False] * count)
    number_path(nodes, path, children, parent, numbering, on_path=set(path))
    place_outside(nodes, numbering, 0, None)

    return Analysis(
        turn=numbering.turn,
        active=numbering.active,
        turn_count=numbering.current,
        leaf_uuid=nodes[leaf].uuid if leaf >= 0 else None,
        prompt_lines=numbering.prompt_lines,
        abandoned=numbering.abandoned,
        rival=rival,
    )
