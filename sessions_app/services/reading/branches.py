"""Abandoned branches: the graph from the turn one split off down to its leaf, and its pages."""

from __future__ import annotations

from dataclasses import dataclass

from ...conversation import analyse
from ...models import Session
from ...transcript import RawRecord
from .records import transcript_records, with_data


@dataclass(slots=True)
class Branch:
    """An abandoned branch: turns 1..`shared` as on the active branch, then its own records."""

    leaf_uuid: str
    shared: int
    turns: int
    rows: dict[int, tuple[int | None, bool]]  # line -> (turn, on this branch), past `shared`
    starts: list[int]  # lines of the prompts that start its turns past `shared`


def abandoned_branch(session: Session, leaf_uuid: str) -> Branch | None:
    """The abandoned branch ending at record `leaf_uuid`; None if none of this session does.

    Only the graph columns of the records from the prompt of the turn it split off
    at down to its leaf are read: the turns before that are the active branch's own.
    """
    entry = next((b for b in session.abandoned if b.get("leaf_uuid") == leaf_uuid), None)
    if entry is None:
        return None
    leaf_line = (
        session.records.filter(uuid=leaf_uuid, sidechain=False)
        .order_by("line")
        .values_list("line", flat=True)
        .first()
    )
    if leaf_line is None:
        return None
    split = max(int(entry.get("at_turn") or 1) - 1, 0)
    start = None
    if split:
        start = (
            session.records.active()
            .turn_starts()
            .filter(turn=split)
            .order_by("line")
            .values_list("line", flat=True)
            .first()
        )
    if start is not None and start <= leaf_line:
        branch = _branch_between(session, leaf_uuid, start, leaf_line, shared=split - 1)
        if branch is not None:
            return branch
    # The walk up from the leaf left that range (a damaged file): read all up to the leaf.
    return _branch_between(session, leaf_uuid, 0, leaf_line, shared=0)


def _branch_between(
    session: Session, leaf_uuid: str, start: int, end: int, *, shared: int
) -> Branch | None:
    nodes = session.records.filter(line__gte=start, line__lte=end).graph_nodes()
    analysis = analyse(nodes, session.agent, leaf_uuid=leaf_uuid)
    if start and analysis.prompt_lines[:1] != [0]:
        return None  # the walk up from the leaf did not end at the range's first prompt
    turns = {
        node.line: (None if turn is None else turn + shared, active)
        for node, turn, active in zip(nodes, analysis.turn, analysis.active, strict=True)
    }
    starts = [nodes[i].line for i in analysis.prompt_lines]
    return Branch(leaf_uuid, shared, shared + analysis.turn_count, turns, starts)


def branch_records(
    session: Session, branch: Branch, *, first_turn: int, last_turn: int, show_all: bool = False
) -> list[RawRecord]:
    """The records of turns first..last of an abandoned branch, as `transcript_records`."""
    records: list[RawRecord] = []
    if first_turn <= branch.shared:
        records = transcript_records(
            session,
            first_turn=first_turn,
            last_turn=min(last_turn, branch.shared),
            show_all=show_all,
        )
    low = max(first_turn, branch.shared + 1)
    picked = {
        line: place
        for line, place in branch.rows.items()
        if (place[0] is not None and low <= place[0] <= last_turn and (place[1] or show_all))
        or (place[0] is None and place[1] and show_all and low <= 1)
    }
    if not picked:
        return records
    page, starts = [], set(branch.starts)
    for row in session.records.filter(line__gte=min(picked), line__lte=max(picked)).order_by(
        "line"
    ):
        if row.line in picked:
            row.turn, row.active = picked[row.line]
            row.starts_turn = row.line in starts  # on this branch, not the active one
            page.append(row)
    return records + with_data(session, page)
