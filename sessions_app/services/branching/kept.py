"""The source rows a fork keeps: what the copy wrote for each, and their graph in the new file."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from datetime import UTC, datetime

from django.utils.dateparse import parse_datetime

from ...conversation import Node
from ...formats import ASSISTANT, COMMAND, LOCAL_OUTPUT, PROMPT
from ...formats.shape import Row


class Unproven(Exception):
    """The cheap read-back cannot vouch for the file; a full import must decide."""


class Written:
    """What the copy wrote, line by line: source line, length and CRC-32 of the bytes written,
    and what the read-back needs to vouch for each line without parsing it.

    A fork is *plain* when every kept line was edited on its bytes at its proven top-level
    `sessionId` or copied unchanged (`at` != -1) and the kept uuid records form one chain,
    each the parent of the next, whose turn starts are the source's (a slash command the
    source did not count is followed by its local output), with the source's turns and
    active flags: then a fresh import of the new file gives every line
    the facts of its source row, and the read-back compares bytes instead of parsing and
    building the graph again. Otherwise `nodes` and `facts` are loaded for the graph check.
    """

    def __init__(self, *, off_branch: bool = False) -> None:
        self.off_branch = off_branch  # the kept rows may lie off the active branch (revived)
        self.src = array("q")
        self.length = array("q")
        self.digest = array("q")
        self.at = array("q")  # where the new id starts in each line (-1: parsed, not edited)
        self.source_length = array("q")
        self.source_digest = array("q")
        self.uuids: list[str] = []  # "" for bookkeeping
        self.assistant = bytearray()  # 1 where the line is an assistant record
        self.nodes: list[Node] = []
        self.facts: list[tuple] = []  # (raw_type, turn, active, starts_turn) per line
        self.assistants = 0
        self.plain = True
        self.root_parent = ""  # the first kept record's parent (must not be kept)
        self.last_uuid = ""
        self.local_command = False  # the last record was a slash command not counted as a turn
        self.turns = 0
        self.turn: list[int | None] = []
        self.prompt_lines: list[int] = []
        self.prompt_texts: list[str] = []

    def add(self, row: Row, length: int, digest: int, at: int = -1) -> None:
        """Take note of one line written from `row` (`at`: see `restamp_into`)."""
        k = len(self.src)
        self.src.append(row.line)
        self.length.append(length)
        self.digest.append(digest)
        self.at.append(at)
        self.source_length.append(row.length)
        self.source_digest.append(row.digest)
        uuid = row.uuid
        self.uuids.append(uuid)
        assistant = row.kind == ASSISTANT
        self.assistant.append(assistant)
        self.assistants += assistant
        if not self.plain:
            return
        plain = at != -1
        if uuid:
            parent = row.parent_uuid or row.logical_parent_uuid
            if not self.last_uuid:
                self.root_parent = parent
            elif parent != self.last_uuid:
                plain = False  # a record whose parent is not the one before it
            if self.local_command and row.kind != LOCAL_OUTPUT:
                plain = False  # a slash command not a turn, for a reason the copy can't see
            self.last_uuid = uuid
            prompt = bool(row.starts_turn)
            # The turn rule on one chain: a prompt starts a turn; a slash command does
            # unless a local command answered it (its child here was its child there);
            # nothing else does.
            self.local_command = row.kind == COMMAND and not prompt
            if (row.kind == PROMPT and not prompt) or (
                prompt and row.kind not in (PROMPT, COMMAND)
            ):
                plain = False
            if not row.active:
                plain = False
            if prompt:
                self.turns += 1
                self.prompt_lines.append(k)
                self.prompt_texts.append(row.text or "")
        elif row.active:
            plain = False
        turn = self.turns or None
        if row.turn != turn:
            plain = False
        self.turn.append(turn)
        self.plain = plain

    def load_graph(self, rows: Iterable[Row]) -> None:
        """The kept rows' nodes and facts, for the graph check (`rows`: the source's, in order)."""
        wanted = iter(self.src)
        line = next(wanted, None)
        for row in rows:
            if row.line != line:
                continue
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
            line = next(wanted, None)
        if len(self.nodes) != len(self.src):
            raise Unproven("the kept rows changed in the index")


def _aware(value: datetime | str) -> datetime | None:
    """A stored time as an aware datetime (SQLite hands back naive UTC, or its text)."""
    parsed = parse_datetime(value) if isinstance(value, str) else value
    if parsed is None or parsed.tzinfo is not None:
        return parsed
    return parsed.replace(tzinfo=UTC)
