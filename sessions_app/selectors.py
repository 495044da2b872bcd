"""Reads for the pages: one function per page-sized question."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from django.db.models import Count, Prefetch, Q, QuerySet

from .conversation import Node, analyse
from .formats import agent_for
from .lineage import Box, box_pks, family_boxes
from .models import Project, Record, Session
from .resume import resume_command
from .services.roots import UnsafePath, open_regular
from .transcript import RawRecord

PAGE_TURNS = 20


def listed_session(session_id: object) -> Session | None:
    """The listed session (not a subagent transcript) with this id, or None."""
    return (
        Session.objects.listed()
        .select_related("project", "parent")
        .filter(session_id=session_id)
        .first()
    )


SESSION_SORTS = {
    "updated": "-updated_at",
    "started": "-started_at",
    "turns": "-turn_count",
    "title": "title",
    "tokens": "-output_tokens",
}


def projects_for_dashboard(*, query: str = "") -> QuerySet[Project]:
    """Projects with sessions, most recently active first, optionally filtered by path."""
    projects = Project.objects.filter(session_count__gt=0)
    if query:
        projects = projects.filter(Q(path__icontains=query) | Q(folder__icontains=query))
    return projects.order_by("-last_activity", "folder")


def projects_with_sessions(*, per_project: int = 20) -> QuerySet[Project]:
    """Projects by last activity, each with its most recent listed sessions."""
    recent = Session.objects.listed().order_by("-updated_at")
    return projects_for_dashboard().prefetch_related(
        Prefetch("sessions", queryset=recent, to_attr="recent_sessions")
    )


def sessions_of_project(*, project: Project, query: str = "", sort: str = "updated") -> QuerySet:
    """A project's listed sessions with their parent and child count, for one sorted list."""
    sessions = (
        Session.objects.listed()
        .filter(project=project)
        .select_related("parent")
        .defer(
            "abandoned", "first_prompt", "rewind_undo", "parent__abandoned", "parent__first_prompt"
        )
    )
    if query:
        sessions = sessions.filter(
            Q(title__icontains=query) | Q(first_prompt__icontains=query) | Q(git_branch=query)
        )
    return sessions.order_by(SESSION_SORTS.get(sort, "-updated_at"), "-id")


def with_children_counts(sessions: list[Session]) -> list[Session]:
    """Set `children_count` on a page of sessions with one query for the whole page."""
    counts = dict(
        Session.objects.filter(parent_id__in=[s.pk for s in sessions])
        .values_list("parent_id")
        .annotate(n=Count("id"))
        .values_list("parent_id", "n")
    )
    for session in sessions:
        session.children_count = counts.get(session.pk, 0)
    return sessions


def transcript_records(
    session: Session, *, first_turn: int, last_turn: int, show_all: bool = False
) -> list[RawRecord]:
    """The records of turns first..last, in file order, each with its parsed line."""
    rows = Record.objects.filter(session=session, turn__gte=first_turn, turn__lte=last_turn)
    if first_turn <= 1 and show_all:
        rows = Record.objects.filter(session=session).filter(
            Q(turn__gte=first_turn, turn__lte=last_turn) | Q(turn__isnull=True, active=True)
        )
    if not show_all:
        rows = rows.filter(active=True)
    return _with_data(session, rows.order_by("line"))


@dataclass(slots=True)
class Branch:
    """An abandoned branch: turns 1..`shared` as on the active branch, then its own records."""

    leaf_uuid: str
    shared: int
    turns: int
    rows: dict[int, tuple[int | None, bool]]  # line -> (turn, on this branch), past `shared`


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
    rows = session.records.filter(line__gte=start, line__lte=end).order_by("line")
    nodes = [
        Node(line, u or None, p or None, kind, ts, side, lp or None, text or None)
        for line, u, p, kind, ts, side, lp, text in rows.values_list(
            "line",
            "uuid",
            "parent_uuid",
            "kind",
            "timestamp",
            "sidechain",
            "logical_parent_uuid",
            "text",
        )
    ]
    analysis = analyse(nodes, session.agent, leaf_uuid=leaf_uuid)
    if start and analysis.prompt_lines[:1] != [0]:
        return None  # the walk up from the leaf did not end at the range's first prompt
    turns = {
        node.line: (None if turn is None else turn + shared, active)
        for node, turn, active in zip(nodes, analysis.turn, analysis.active, strict=True)
    }
    return Branch(leaf_uuid, shared, shared + analysis.turn_count, turns)


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
    page = []
    for row in session.records.filter(line__gte=min(picked), line__lte=max(picked)).order_by(
        "line"
    ):
        if row.line in picked:
            row.turn, row.active = picked[row.line]
            page.append(row)
    return records + _with_data(session, page)


def record_at(session: Session, line: int) -> RawRecord | None:
    """One record with its parsed line, for "show all" of a long output."""
    rows = session.records.filter(line=line)
    found = _with_data(session, rows)
    return found[0] if found else None


def _with_data(session: Session, rows: Iterable[Record]) -> list[RawRecord]:
    try:
        f = open_regular(session.path, root=session.project.root)
    except (OSError, UnsafePath):
        return [_raw(row, None) for row in rows]
    with f:
        return [_raw(row, _load(f, row.offset, row.length)) for row in rows]


def _load(f: BinaryIO, offset: int, length: int) -> Any:
    f.seek(offset)
    try:
        return orjson.loads(f.read(length))
    except orjson.JSONDecodeError:
        return None


def _raw(row: Record, data: Any) -> RawRecord:
    return RawRecord(
        line=row.line,
        kind=row.kind,
        raw_type=row.raw_type,
        subtype=row.subtype,
        turn=row.turn,
        active=row.active,
        sidechain=row.sidechain,
        timestamp=row.timestamp,
        data=data,
        length=row.length,
        text=row.text,
    )


def subagents_of(session: Session) -> dict[str, Session]:
    """The session's subagent transcripts by agent id (from `agent-<id>.jsonl`)."""
    subs = Session.objects.filter(is_subagent=True, owner_session_id=session.session_id)
    out = {}
    for sub in subs.only("id", "path", "agent_name", "record_count", "session_id"):
        name = sub.path.rsplit("/", 1)[-1].removesuffix(".jsonl").removeprefix("agent-")
        out[name] = sub
    return out


def lineage_of(session: Session) -> tuple[Box, dict[int, Session]]:
    """The family of `session` as bounded boxes to draw, and the sessions they show."""
    parent_of = dict(Session.objects.filter(parent__isnull=False).values_list("pk", "parent_id"))
    root = family_boxes(parent_of, session.pk)
    sessions = Session.objects.filter(pk__in=box_pks(root)).only(
        "session_id", "title", "kind", "fork_turn", "turn_count", "parent_id"
    )
    return root, {s.pk: s for s in sessions}


def turn_prompt_text(session: Session, turn: int) -> str:
    """The full text of the prompt that starts `turn`, read from the session file."""
    record = (
        session.records.active()
        .turn_starts()
        .filter(turn=turn)
        .order_by("line")
        .values_list("offset", "length", "text")
        .first()
    )
    if record is None:
        return ""
    offset, length, text = record
    try:
        with open_regular(session.path, root=session.project.root) as f:
            f.seek(offset)
            data = orjson.loads(f.read(length))
    except (OSError, UnsafePath, orjson.JSONDecodeError):
        return text
    agent = agent_for(session.agent)
    return agent.record_text(data) if isinstance(data, dict) else text


def session_summary(session: Session) -> dict:
    """What scripts need to know about a session, as plain data."""
    return {
        "session_id": str(session.session_id),
        "path": session.path,
        "title": session.title,
        "agent": session.agent,
        "turns": session.turn_count,
        "parent_id": str(session.parent.session_id) if session.parent_id else None,
        "kind": session.kind or "original",
        "turn": session.fork_turn,
        "resume_command": resume_command(session),
    }


def subagent_records(sub: Session) -> list[RawRecord]:
    """A subagent transcript's records, shown as one conversation of its own."""
    records = _with_data(sub, sub.records.order_by("line"))
    for record in records:
        # Every record of a subagent file is a sidechain; here it is the main line.
        record.sidechain, record.active, record.turn = False, True, 1
    return records


def turn_list(session: Session) -> list[dict]:
    """Every turn of the active branch with its prompt text (bounded) and time."""
    rows = (
        session.records.active()
        .turn_starts()
        .order_by("line")
        .values_list("turn", "text", "timestamp", "uuid")
    )
    seen: set[int] = set()
    turns = []
    for turn, text, timestamp, record_uuid in rows:
        if turn in seen:
            continue
        seen.add(turn)
        turns.append(
            {
                "turn": turn,
                "prompt": text,
                "timestamp": timestamp.isoformat() if timestamp else None,
                "uuid": record_uuid,
            }
        )
    return turns


def undo_available(session: Session) -> bool:
    """Whether the last rewind can still be undone: the file is as the rewind left it."""
    state = session.rewind_undo or {}
    if not state:
        return False
    try:
        # lstat: a link put in the file's place is not the file the rewind left.
        stat = Path(session.path).lstat()
    except OSError:
        return False
    return (stat.st_size, stat.st_mtime_ns) == (state.get("size"), state.get("mtime_ns"))


def edit_prompt(session: Session) -> str | None:
    """For an edit & fork not yet carried on: the prompt it was cut before, to edit."""
    if session.kind != Session.Kind.FORK_BEFORE or not session.parent_id or not session.fork_turn:
        return None
    if session.turn_count != session.fork_turn - 1:
        return None
    return turn_prompt_text(session.parent, session.fork_turn)
