"""What the graph is made of and what analysing it gives: nodes, turns, abandoned branches."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..formats import ParsedRecord


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
    # Claude Code's rule: the time of the newest leaf other than the active one
    # (`NO_TIME` if none), what an append's new leaf must reach (`Tip.rival`).
    rival: datetime | None = None
