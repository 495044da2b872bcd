"""The conversation graph of one session file: active branch, turns, abandoned branches.

Pure Python. Every place that counts turns goes through `analyse`, and `analyse`
decides what starts a turn with `is_turn_start` alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .formats import (
    COMMAND,
    CONVERSATION_KINDS,
    LAST_RECORD,
    LOCAL_OUTPUT,
    PROMPT,
    ParsedRecord,
    agent_for,
)

# Built-in Claude Code commands that never reach the model. A command the model
# answered (custom commands expand into a prompt) is a turn; these are not, even
# when the file lacks the `<local-command-stdout>` record that usually follows them.
LOCAL_COMMANDS = frozenset(
    [
        "add-dir",
        "agents",
        "bashes",
        "branch",
        "clear",
        "compact",
        "config",
        "context",
        "cost",
        "doctor",
        "exit",
        "export",
        "help",
        "hooks",
        "ide",
        "login",
        "logout",
        "mcp",
        "memory",
        "model",
        "output-style",
        "permissions",
        "plugin",
        "privacy-settings",
        "quit",
        "release-notes",
        "resume",
        "rewind",
        "stats",
        "status",
        "statusline",
        "terminal-setup",
        "theme",
        "upgrade",
        "usage",
        "vim",
    ]
)
COMMAND_NAME_RE = re.compile(r"<command-name>/?([^<\s]+)</command-name>")
NO_TIME = datetime.min.replace(tzinfo=UTC)


@dataclass(slots=True)
class Node:
    """The graph-relevant fields of one record, whatever it was read from."""

    line: int
    uuid: str | None
    parent_uuid: str | None
    kind: str
    timestamp: datetime | None = None
    sidechain: bool = False
    logical_parent_uuid: str | None = None
    text: str | None = None


def node_from_record(line: int, record: ParsedRecord) -> Node:
    """The graph node of a freshly parsed line."""
    return Node(
        line,
        record.uuid,
        record.parent_uuid,
        record.kind,
        record.time,
        record.sidechain,
        record.logical_parent_uuid,
        record.text,
    )


@dataclass(slots=True)
class AbandonedBranch:
    """A genuine branch the user left by rewinding inside the CLI."""

    at_turn: int  # the active turn that replaced it
    turns: int  # prompts on the abandoned branch
    first_line: int
    leaf_uuid: str | None
    prompt: str


@dataclass(slots=True)
class Analysis:
    """Per-line results (indexes into the node sequence) and the session's turn facts."""

    turn: list[int | None]
    active: list[bool]
    turn_count: int
    leaf_uuid: str | None
    prompt_lines: list[int] = field(default_factory=list)  # node index of each turn's prompt
    abandoned: list[AbandonedBranch] = field(default_factory=list)


def is_turn_start(node: Node, *, answered_locally: bool) -> bool:
    """Whether `node` starts a turn: a user prompt a human typed.

    The rule (DESIGN.md, "One definition of a turn"): the record must be on the
    branch being numbered and not in a sidechain (the caller walks only that
    branch); the reader must have classified it as a prompt by its shape, which
    already excludes tool results, `isMeta` records, compaction summaries, local
    command output, interruption notices, task notifications, attachments and
    system records, and Qwen's mid-turn messages; and if it is a slash command it
    counts only when the model answered it, not when a built-in local command did.
    """
    if node.sidechain:
        return False
    if node.kind == PROMPT:
        return True
    if node.kind != COMMAND:
        return False
    if answered_locally:
        return False
    match = COMMAND_NAME_RE.search(node.text or "")
    return not (match and match.group(1) in LOCAL_COMMANDS)


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

    leaf = _choose_leaf(nodes, index, parent, children, agent, leaf_uuid)
    path = _path_to(leaf, parent)
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
            branch = _walk_subtree(child, children)
            branch_leaf = _latest_leaf(nodes, branch, children, parent)
            branch_path = _path_between(child, branch_leaf, parent)
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


def _choose_leaf(
    nodes: Sequence[Node],
    index: dict[str, int],
    parent: list[int],
    children: dict[int, list[int]],
    agent: str,
    leaf_uuid: str | None,
) -> int:
    if leaf_uuid is not None:
        return index.get(leaf_uuid, -1)
    if agent_for(agent).leaf_rule == LAST_RECORD:
        # Qwen resumes from the last record in the file (a rewind appends a marker).
        return max(index.values(), default=-1)
    return _latest_leaf(nodes, list(index.values()), children, parent)


def _latest_leaf(
    nodes: Sequence[Node], candidates: list[int], children: dict[int, list[int]], parent: list[int]
) -> int:
    """Claude Code's rule: the leaf whose nearest conversation record is newest."""
    best, best_key = -1, (NO_TIME, -1)
    for i in candidates:
        if children.get(i):
            continue
        key = (_conversation_time(nodes, i, parent), i)
        if key > best_key:
            best, best_key = i, key
    return best


def _conversation_time(nodes: Sequence[Node], i: int, parent: list[int]) -> datetime:
    # Walk up to the nearest user/assistant record; a leaf of progress records
    # must not win over the conversation's real end.
    for _ in range(1000):
        if i < 0:
            break
        if nodes[i].kind in CONVERSATION_KINDS:
            return nodes[i].timestamp or NO_TIME
        i = parent[i]
    return NO_TIME


def _path_to(leaf: int, parent: list[int]) -> list[int]:
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


def _path_between(top: int, leaf: int, parent: list[int]) -> list[int]:
    """The path from `top` down to `leaf`, walking up only as far as `top`."""
    path: list[int] = []
    i = leaf
    while i >= 0 and len(path) <= len(parent):
        path.append(i)
        if i == top:
            path.reverse()
            return path
        i = parent[i]
    return [top]


def _walk_subtree(top: int, children: dict[int, list[int]]) -> list[int]:
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
    out.sort()
    return out
