"""A subagent's transcript for the call that started it, in each layout the CLIs wrote.

- Its own file, `<session>/subagents/agent-<id>.jsonl` (or `agent-<id>.jsonl` beside
  the session): imported as a session of its own (`family.subagents_of`).
- `agent_progress` records in the session's file, each carrying one of the
  subagent's messages under the call's id (`Agent.subagent_step`).
- Claude Code 1.0's inline sidechains: the subagent's records in the session's file,
  marked `isSidechain`, starting with a record that holds the call's prompt.

Each is read through the index (lines CRC-checked as every page read) and given as
one conversation of its own: one turn, every record on it. Bounded: at most
`MAX_RECORDS` of the file's records after the call are looked at.
"""

from __future__ import annotations

from dataclasses import replace

import orjson

from ..formats import PROGRESS, TOOL_RESULT, agent_for
from ..models import Session
from ..services.reading.records import iter_with_data, record_at, subagent_records, with_data
from ..transcript import RawRecord
from .family import subagents_of

MAX_RECORDS = 5_000


def call_subagent(
    session: Session,
    line: int,
    index: int,
    *,
    agent_id: str | None = None,
    subs: dict[str, Session] | None = None,
) -> list[RawRecord] | None:
    """The records of the subagent the call at `line` (its `index`-th part) started, or
    None when the session's files keep none of it.

    `agent_id`: the id the call's result gave, when the caller read it already;
    `subs`: `subagents_of(session)`, when the caller asks for many calls.
    """
    subs = subagents_of(session) if subs is None else subs
    if agent_id and agent_id in subs:
        return subagent_records(subs[agent_id])
    record = record_at(session, line)
    agent = agent_for(session.agent)
    if record is None or not isinstance(record.data, dict):
        return None
    parts = agent.assistant_parts(record.data)
    if not 0 <= index < len(parts) or parts[index].kind != "tool":
        return None
    call = parts[index]
    found = _from_file(session, subs, record.line, call.call_id)
    if found is None:
        found = _from_progress(session, line, call.call_id)
    if found is None:
        found = _from_sidechain(session, line, agent.subagent_prompt(call.input or {}))
    return found


def _from_file(
    session: Session, subs: dict[str, Session], line: int, call_id: str
) -> list[RawRecord] | None:
    """Its own file, named by the agent id the call's result gives."""
    if not subs:
        return None
    agent = agent_for(session.agent)
    rows = session.records.filter(kind=TOOL_RESULT, line__gt=line).order_by("line")
    # Read one result at a time: the call's own is most often the next one.
    for result in iter_with_data(session, rows[:MAX_RECORDS]):
        if not isinstance(result.data, dict):
            continue
        for outcome in agent.tool_results(result.data):
            if outcome.call_id == call_id:
                details = outcome.details
                agent_id = details.get("agentId") if isinstance(details, dict) else None
                sub = subs.get(agent_id) if isinstance(agent_id, str) else None
                return subagent_records(sub) if sub is not None else None
    return None


def _from_progress(session: Session, line: int, call_id: str) -> list[RawRecord] | None:
    agent = agent_for(session.agent)
    rows = session.records.filter(kind=PROGRESS, line__gt=line).order_by("line")
    steps: list[RawRecord] = []
    for record in with_data(session, rows[:MAX_RECORDS]):
        step = agent.subagent_step(record.data, call_id) if isinstance(record.data, dict) else None
        if step is None:
            continue
        parsed = agent.parse_line(orjson.dumps(step))
        steps.append(
            RawRecord(
                line=record.line,
                kind=parsed.kind,
                raw_type=parsed.raw_type,
                subtype=parsed.subtype,
                turn=1,
                active=True,
                sidechain=False,
                timestamp=record.timestamp,
                data=step,
                text=parsed.text or "",
            )
        )
    return steps or None


def _from_sidechain(session: Session, line: int, prompt: str) -> list[RawRecord] | None:
    """The sidechain that starts with the call's prompt, and every record under it."""
    if not prompt.strip():
        return None
    rows = list(
        session.records.filter(sidechain=True, line__gt=line).order_by("line")[:MAX_RECORDS]
    )
    wanted = prompt.strip()
    root = next(
        (r for r in rows if not r.parent_uuid and r.uuid and (r.text or "").strip() == wanted),
        None,
    )
    if root is None:
        return None
    members, kept = {root.uuid}, [root]
    for row in rows:
        if row.line > root.line and row.parent_uuid in members:
            kept.append(row)
            if row.uuid:
                members.add(row.uuid)
    return [
        replace(record, sidechain=False, active=True, turn=1, starts_turn=None)
        for record in with_data(session, kept)
    ]
