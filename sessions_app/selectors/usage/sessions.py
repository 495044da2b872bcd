"""A session's own usage: the whole session, each message once, by where it belongs; a family's.

Its messages are those of its file (copied ones too) and of its subagents' files; the
totals and prices are `selectors.usage`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

from django.db import connection

from ...formats import ASSISTANT, PROGRESS, agent_for
from ...models import Record, Session, Usage
from ...pricing import LONG_CONTEXT
from ...services.reading.records import with_data
from ..family import agent_id_of
from . import Totals, grouped_usage


def session_usage(session: Session) -> tuple[Totals, dict[str, Totals]]:
    """The whole session (its file, copied messages too, and its subagents' files), each
    message once, in total and per model."""
    total, per_model = Totals(), dict[str, Totals]()
    for priced in _session_sums(session):
        total.add(*priced)
        per_model.setdefault(priced[0], Totals()).add(*priced)
    return total, per_model


def _session_sums(session: Session) -> list[tuple[str, date | None, bool, tuple[int, ...]]]:
    """`Totals.add`'s arguments for the whole session, summed per model, day and tier.

    A file's messages have one key each: without subagents, one `GROUP BY` of its rows
    (and of whether a message's hour-long cache writes exceed its cache writes, so that
    the cost's `min` of the two stays exact). With subagents, each message once by key.
    """
    subs = Session.objects.subagents_of(session)
    if subs.exists():
        return _summed(_whole_session(session, labels=False).values())
    odd = "u.cache_write_1h_tokens > u.cache_write_tokens"
    rows = grouped_usage(odd, "", "u.session_id = %s", [session.pk])
    return [(model, day, long, counts) for _odd, model, day, long, counts in rows]


def _summed(messages: Iterable[_Message]) -> list[tuple[str, date | None, bool, tuple[int, ...]]]:
    """`Totals.add`'s arguments for these messages, summed as `_session_sums`'s `GROUP BY`
    sums rows: per model, day, price tier, and whether the hour-long cache writes exceed
    the cache writes (so that the cost's `min` of the two stays exact)."""
    sums: dict[tuple[str, date | None, bool, bool], list[int]] = {}
    for message in messages:
        model, day, long, counts = message.priced
        into = sums.setdefault((model, day, long, counts[4] > counts[2]), [0] * len(counts))
        for k, value in enumerate(counts):
            into[k] += value
    return [(model, day, long, tuple(c)) for (model, day, long, _odd), c in sums.items()]


@dataclass
class UsagePart:
    """Where in a session some of its messages belong, and their totals."""

    part: str  # "active branch", "abandoned branch", "sidechain", "subagent <agent id>"
    turn: int | None
    totals: Totals


def session_usage_parts(session: Session) -> list[UsagePart]:
    """The whole session's messages (as `session_usage` counts them) by where they belong:
    each turn of the active branch, abandoned branches, inline sidechains, each subagent."""
    parts: dict[tuple[str, int | None], Totals] = {}
    for message in _whole_session(session, labels=True).values():
        parts.setdefault(message.place, Totals()).add(*message.priced)
    order = {"active branch": 0, "abandoned branch": 1, "sidechain": 2}
    keys = sorted(parts, key=lambda p: (order.get(p[0], 3), p[0], p[1] or 0))
    return [UsagePart(part, turn, parts[part, turn]) for part, turn in keys]


@dataclass
class _Message:
    model: str
    at: datetime | None
    counts: tuple[int, int, int, int, int, int]  # `_COUNTS`
    place: tuple[str, int | None]

    @property
    def priced(self) -> tuple[str, date | None, bool, tuple[int, ...]]:
        """`Totals.add`'s arguments for this one message."""
        i, _, w, r, _, reasoning = self.counts
        return (
            self.model,
            self.at.date() if self.at else None,
            i + w + r > LONG_CONTEXT,
            (*self.counts[:5], 1, reasoning),
        )


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "cache_write_1h_tokens",
    "reasoning_tokens",
)


def _whole_session(session: Session, *, labels: bool) -> dict[str, _Message]:
    """Every message of the session and of its subagents' files, once by key.

    A subagent's message that the parent also holds in a `progress` record (older
    releases) belongs to the subagent; with `labels`, a progress copy whose subagent
    has no file of its own is named by the agent id its record gives.
    """
    found: dict[str, _Message] = {}
    subs = Session.objects.subagents_of(session)
    agent_ids = {sub.pk: agent_id_of(sub) for sub in subs.only("id", "path")}
    rows = Usage.objects.filter(session_id__in=list(agent_ids)).order_by("session_id", "line")
    for pk, key, model, at, *counts in rows.values_list(
        "session_id", "key", "model", "at", *_COUNTS
    ).iterator(chunk_size=5000):
        _keep(found, key, _Message(model, at, tuple(counts), (f"subagent {agent_ids[pk]}", None)))
    table, record = Usage._meta.db_table, Record._meta.db_table
    sql = (
        'SELECT u."key", u.model, u.at, u.input_tokens, u.output_tokens, '  # noqa: S608
        "u.cache_write_tokens, u.cache_read_tokens, u.cache_write_1h_tokens, "
        f"u.reasoning_tokens, u.line, r.kind, r.active, r.sidechain, r.turn FROM {table} u "
        f"LEFT JOIN {record} r ON r.session_id = u.session_id AND r.line = u.line "
        "WHERE u.session_id = %s ORDER BY u.line"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [session.pk])
        rows_main = cursor.fetchall()
    progress_lines: dict[str, int] = {}
    for key, model, at, *rest in rows_main:
        counts, (line, kind, active, sidechain, turn) = tuple(rest[:6]), rest[6:]
        if isinstance(at, str):  # SQLite without Django's converters
            at = datetime.fromisoformat(at)
        if kind == PROGRESS:
            place: tuple[str, int | None] = ("subagent", None)
            progress_lines[key] = line
        elif sidechain:
            place = ("sidechain", None)
        elif active:
            place = ("active branch", turn)
        else:
            place = ("abandoned branch", None)
        _keep(found, key, _Message(model or "", at, counts, place))
    if labels:
        unnamed = {k: n for k, n in progress_lines.items() if found[k].place[0] == "subagent"}
        named = _progress_agents(session, set(unnamed.values()))
        for key, line in unnamed.items():
            found[key].place = (f"subagent {named.get(line) or '(unnamed)'}", None)
    return found


def _keep(found: dict[str, _Message], key: str, message: _Message) -> None:
    """The first place a message was seen keeps it; the larger count of each kind wins."""
    seen = found.get(key)
    if seen is None:
        found[key] = message
        return
    merged = tuple(max(a, b) for a, b in zip(seen.counts, message.counts, strict=True))
    seen.counts = merged  # type: ignore[assignment]


def _progress_agents(session: Session, lines: set[int]) -> dict[int, str]:
    """The subagent id that each of these progress records names (read from the file)."""
    if not lines:
        return {}
    usage_of = agent_for(session.agent).usage_of
    out = {}
    for record in with_data(session, session.records.filter(line__in=sorted(lines))):
        usage = usage_of(record.data) if isinstance(record.data, dict) else None
        if usage is not None and usage.agent:
            out[record.line] = usage.agent
    return out


def turn_usage(
    session: Session, *, first: int = 1, last: int | None = None
) -> list[tuple[int, Totals]]:
    """Each turn of the active branch (or of turns first..last) with its messages' totals,
    in turn order."""
    record = Record._meta.db_table
    joins = f"JOIN {record} r ON r.session_id = u.session_id AND r.line = u.line"
    # The main conversation's messages: a subagent's, copied into progress records, are
    # the subagent's (session_usage_parts).
    where = "u.session_id = %s AND r.active AND r.turn IS NOT NULL AND r.kind = %s"
    params: list[object] = [session.pk, ASSISTANT]
    if first > 1 or last is not None:
        where += " AND r.turn BETWEEN %s AND %s"
        params += [first, last if last is not None else 2**31 - 1]
    turns: dict[int, Totals] = defaultdict(Totals)
    for turn, model, day, long, counts in grouped_usage("r.turn", joins, where, params):
        turns[int(turn)].add(model, day, long, counts)
    return sorted(turns.items())


def lines_usage(session: Session, lines: set[int]) -> Totals:
    """The totals of the session's messages that start at these lines (a branch's own)."""
    totals = Totals()
    if not lines:
        return totals
    where = "u.session_id = %s AND u.line BETWEEN %s AND %s"
    params = [session.pk, min(lines), max(lines)]
    for line, model, day, long, counts in grouped_usage("u.line", "", where, params):
        if int(line) in lines:
            totals.add(model, day, long, counts)
    return totals


@dataclass
class FamilyMember:
    session: Session
    own: Totals  # what was spent in this session after it split from its parent
    inherited: int  # messages it holds that an ancestor holds too
    parent_session_id: str | None = None  # its parent's ref, when the parent is in the family


@dataclass
class FamilyUsage:
    members: list[FamilyMember]
    total: Totals  # the shared prefix counted once


def family_usage(sessions: dict[int, Session]) -> FamilyUsage:
    """Each session's own usage (after its split point) and the family's, each message once."""
    rows = Usage.objects.filter(session_id__in=list(sessions)).values_list(
        "session_id",
        "key",
        "model",
        "at",
        "input_tokens",
        "output_tokens",
        "cache_write_tokens",
        "cache_read_tokens",
        "cache_write_1h_tokens",
        "reasoning_tokens",
    )
    keys: dict[int, dict[str, tuple]] = defaultdict(dict)
    for pk, key, *rest in rows.iterator(chunk_size=5000):
        keys[pk][key] = tuple(rest)
    members, total = [], Totals()
    counted: set[str] = set()
    for pk, session in sorted(sessions.items(), key=lambda kv: _depth(kv[1], sessions)):
        ancestors: set[str] = set()
        up = session.parent_id
        seen = {pk}
        while up in sessions and up not in seen:
            seen.add(up)
            ancestors.update(keys.get(up, {}))
            up = sessions[up].parent_id
        own = Totals()
        inherited = 0
        for key, (model, at, *counts) in keys.get(pk, {}).items():
            if key in ancestors:
                inherited += 1
                continue
            counts_n = (*counts[:5], 1, counts[5])
            day = at.date() if at else None
            long = counts[0] + counts[2] + counts[3] > LONG_CONTEXT
            own.add(model, day, long, counts_n)
            if key not in counted:
                counted.add(key)
                total.add(model, day, long, counts_n)
        parent = sessions.get(session.parent_id) if session.parent_id else None
        parent_id = parent.ref if parent is not None else None
        members.append(FamilyMember(session, own, inherited, parent_id))
    return FamilyUsage(members, total)


def _depth(session: Session, sessions: dict[int, Session]) -> int:
    depth, up, seen = 0, session.parent_id, {session.pk}
    while up in sessions and up not in seen:
        seen.add(up)
        depth += 1
        up = sessions[up].parent_id
    return depth
