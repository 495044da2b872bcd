"""The source rows a fork keeps: what the copy wrote for each, and their graph in the new file."""

from __future__ import annotations

from array import array
from datetime import UTC, datetime

from django.utils.dateparse import parse_datetime

from ...conversation import Node
from ...formats import ASSISTANT
from ...formats.shape import Row


class Unproven(Exception):
    """The cheap read-back cannot vouch for the file; a full import must decide."""


class Written:
    """What the copy wrote, line by line: source line, length and CRC-32 of the bytes written,
    and each kept row's place in the graph (its node, numbered in the new file) and facts."""

    def __init__(self) -> None:
        self.src = array("q")
        self.length = array("q")
        self.digest = array("q")
        self.nodes: list[Node] = []
        self.facts: list[tuple] = []  # (raw_type, turn, active, starts_turn) per line
        self.assistants = 0

    def add(self, row: Row, length: int, digest: int) -> None:
        self.src.append(row.line)
        self.length.append(length)
        self.digest.append(digest)
        ts = row.timestamp
        if ts is not None and (ts.__class__ is not datetime or ts.tzinfo is None):
            ts = _aware(ts)
        self.nodes.append(
            Node(
                len(self.nodes),
                row.uuid or None,
                row.parent_uuid or None,
                row.kind,
                ts,
                bool(row.sidechain),
                row.logical_parent_uuid or None,
                row.text or None,
            )
        )
        self.facts.append((row.raw_type, row.turn, bool(row.active), bool(row.starts_turn)))
        self.assistants += row.kind == ASSISTANT


def _aware(value: datetime | str) -> datetime | None:
    """A stored time as an aware datetime (SQLite hands back naive UTC, or its text)."""
    parsed = parse_datetime(value) if isinstance(value, str) else value
    if parsed is None or parsed.tzinfo is not None:
        return parsed
    return parsed.replace(tzinfo=UTC)
