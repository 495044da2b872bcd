"""The conversation graph of one session file: active branch, turns, abandoned branches.

Pure Python. Every place that counts turns goes through `analyse`, and `analyse`
decides what starts a turn with `is_turn_start` alone.

Modules, one rule each: `nodes` (a node per record, and what an analysis gives),
`turns` (the one turn rule, with Claude Code's built-in local commands), `walks`
(the leaf the CLI resumes from, paths and subtrees over the parent links).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formats import CONVERSATION_KINDS, LOCAL_OUTPUT
from .nodes import AbandonedBranch, Analysis, Node, node_from_record
from .turns import LOCAL_COMMANDS, is_turn_start
from .walks import choose_leaf, latest_leaf, path_between, path_to, walk_subtree

__all__ = [
    "LOCAL_COMMANDS",
    "AbandonedBranch",
    "Analysis",
    "Node",
    "analyse",
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

    def answered_locally(i: int) -> bool:
        return any(nodes[c].kind == LOCAL_OUTPUT for c in children.get(i, ()))

    leaf = choose_leaf(nodes, index, parent, children, agent, leaf_uuid)
    path = path_to(leaf, parent)
    on_path = set(path)

    turn: list[int | None] = [None] * count
    active = [False] * count
    prompt_lines: list[int] = []
    abandoned: list[AbandonedBranch] = []
    current = 0
    for i in path:
        if is_turn_start(nodes[i], answered_locally=answered_locally(i)):
            current += 1
            prompt_lines.append(i)
        active[i] = True
        turn[i] = current or None
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
                abandoned.append(
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
                active[j] = True
                turn[j] = current or None

    # Records outside the graph (bookkeeping, sidechains) sit in the turn around them.
    current_turn: int | None = None
    for i in range(count):
        if active[i]:
            current_turn = turn[i]
        elif turn[i] is None and (nodes[i].sidechain or not nodes[i].uuid):
            turn[i] = current_turn

    return Analysis(
        turn=turn,
        active=active,
        turn_count=current,
        leaf_uuid=nodes[leaf].uuid if leaf >= 0 else None,
        prompt_lines=prompt_lines,
        abandoned=abandoned,
    )
