"""Tokens and cost: per day and model, per project, per session, per turn, per family.

Every figure comes from `Usage` rows: one per API message and session. Totals
across sessions leave out the rows marked `copy` (a message a fork copied from
its parent), so each message counts once. Cost is priced per model, per day and
per long-context tier (`pricing`); tokens of a model without a price are kept
apart as unpriced, never counted as free.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from django.db import connection

from ..formats import ASSISTANT, PROGRESS, agent_for
from ..models import Record, Session, Usage
from ..pricing import LONG_CONTEXT, rates
from .family import agent_id_of
from .records import with_data

TOKEN_KINDS = ("input", "output", "cache_write", "cache_read", "cache_write_1h")


@dataclass
class Totals:
    """Tokens of each kind, messages, and their cost (without the unpriced models' share)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    cache_write_1h: int = 0  # of cache_write
    messages: int = 0
    cost: Decimal = field(default_factory=Decimal)
    unpriced: dict[str, int] = field(default_factory=dict)  # model -> tokens with no price
    sources: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    @property
    def priced(self) -> bool:
        """Whether the cost covers every token (no model without a price)."""
        return not self.unpriced

    def add(self, model: str, day: date | None, long: bool, counts: tuple[int, ...]) -> None:
        i, o, w, r, h, n = counts
        self.input += i
        self.output += o
        self.cache_write += w
        self.cache_read += r
        self.cache_write_1h += h
        self.messages += n
        if i + o + w + r == 0:
            return
        price = rates(model, day, long_context=long)
        if price is None:
            name = model or "(no model)"
            self.unpriced[name] = self.unpriced.get(name, 0) + i + o + w + r
        else:
            self.cost += price.cost(i, o, w, r, h)
            self.sources.add(price.source)

    def merge(self, other: Totals) -> None:
        for name in (*TOKEN_KINDS, "messages"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost += other.cost
        for model, tokens in other.unpriced.items():
            self.unpriced[model] = self.unpriced.get(model, 0) + tokens
        self.sources |= other.sources


def _day_sql() -> str:
    if connection.vendor == "postgresql":
        return "(u.at AT TIME ZONE 'UTC')::date"
    return "date(u.at)"


def _grouped(extra_group: str | None, joins: str, where: str, params: list) -> list[tuple]:
    """(extra, model, day, long, in, out, cache write, cache read, messages) per group."""
    table = Usage._meta.db_table
    day = _day_sql()
    long = f"(u.input_tokens + u.cache_write_tokens + u.cache_read_tokens) > {LONG_CONTEXT}"
    group = f"{extra_group}, " if extra_group else ""
    sql = (
        f"SELECT {extra_group or 'NULL'}, u.model, {day}, {long}, SUM(u.input_tokens), "  # noqa: S608
        "SUM(u.output_tokens), SUM(u.cache_write_tokens), SUM(u.cache_read_tokens), "
        "SUM(u.cache_write_1h_tokens), COUNT(*) "
        f"FROM {table} u {joins} WHERE {where} "
        f"GROUP BY {group}u.model, {day}, {long}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    out = []
    for extra, model, day_value, is_long, *counts in rows:
        if isinstance(day_value, str):
            day_value = date.fromisoformat(day_value)
        elif isinstance(day_value, datetime):
            day_value = day_value.date()
        out.append((extra, model or "", day_value, bool(is_long), tuple(int(c) for c in counts)))
    return out


@dataclass
class DayUsage:
    day: date | None
    models: dict[str, Totals]
    total: Totals


def _where(
    *, project: int | None, agent: str, since: date | None, until: date | None
) -> tuple[str, str, list[object]]:
    """The joins, condition and parameters of a filter (every message counted once)."""
    joins, where, params = "", 'NOT u."copy"', list[object]()
    if project is not None or agent:
        joins = f"JOIN {Session._meta.db_table} s ON s.id = u.session_id"
    if project is not None:
        where += " AND s.project_id = %s"
        params.append(project)
    if agent:
        where += " AND s.agent = %s"
        params.append(agent)
    # Compared as days, never as a day plus one: 9999-12-31 is a day like any other.
    if since is not None:
        where += f" AND {_day_sql()} >= %s"
        params.append(connection.ops.adapt_datefield_value(since))
    if until is not None:
        where += f" AND {_day_sql()} <= %s"
        params.append(connection.ops.adapt_datefield_value(until))
    return joins, where, params


def usage_by_day(
    *,
    project: int | None = None,
    agent: str = "",
    since: date | None = None,
    until: date | None = None,
) -> list[DayUsage]:
    """Each day with usage (UTC), by model, newest last; every message counted once."""
    joins, where, params = _where(project=project, agent=agent, since=since, until=until)
    days: dict[date | None, DayUsage] = {}
    for _, model, day, long, counts in _grouped(None, joins, where, params):
        entry = days.setdefault(day, DayUsage(day, {}, Totals()))
        entry.models.setdefault(model, Totals()).add(model, day, long, counts)
        entry.total.add(model, day, long, counts)
    return [days[d] for d in sorted(days, key=lambda d: d or date.min)]


def usage_by_project(
    *, agent: str = "", since: date | None = None, until: date | None = None
) -> dict[int, Totals]:
    """Each project's totals (subagents included), every message counted once."""
    _, where, params = _where(project=None, agent=agent, since=since, until=until)
    joins = f"JOIN {Session._meta.db_table} s ON s.id = u.session_id"
    out: dict[int, Totals] = defaultdict(Totals)
    for project, model, day, long, counts in _grouped("s.project_id", joins, where, params):
        out[project].add(model, day, long, counts)
    return dict(out)


def usage_by_model(
    *, project: int | None = None, days: list[DayUsage] | None = None
) -> dict[str, Totals]:
    """Totals per model, every message counted once (from `days` when given)."""
    out: dict[str, Totals] = {}
    for day in usage_by_day(project=project) if days is None else days:
        for model, totals in day.models.items():
            out.setdefault(model, Totals()).merge(totals)
    return dict(sorted(out.items(), key=lambda kv: -kv[1].tokens))


def session_usage(session: Session) -> tuple[Totals, dict[str, Totals]]:
    """The whole session (its file, copied messages too, and its subagents' files), each
    message once, in total and per model."""
    total, per_model = Totals(), dict[str, Totals]()
    for message in _whole_session(session, labels=False).values():
        total.add(*message.priced)
        per_model.setdefault(message.model, Totals()).add(*message.priced)
    return total, per_model


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
    counts: tuple[int, int, int, int, int]
    place: tuple[str, int | None]

    @property
    def priced(self) -> tuple[str, date | None, bool, tuple[int, ...]]:
        """`Totals.add`'s arguments for this one message."""
        i, _, w, r, _ = self.counts
        return (
            self.model,
            self.at.date() if self.at else None,
            i + w + r > LONG_CONTEXT,
            (
                *self.counts,
                1,
            ),
        )


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "cache_write_1h_tokens",
)


def _whole_session(session: Session, *, labels: bool) -> dict[str, _Message]:
    """Every message of the session and of its subagents' files, once by key.

    A subagent's message that the parent also holds in a `progress` record (older
    releases) belongs to the subagent; with `labels`, a progress copy whose subagent
    has no file of its own is named by the agent id its record gives.
    """
    found: dict[str, _Message] = {}
    subs = Session.objects.filter(is_subagent=True, owner_session_id=session.session_id)
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
        f"u.line, r.kind, r.active, r.sidechain, r.turn FROM {table} u "
        f"LEFT JOIN {record} r ON r.session_id = u.session_id AND r.line = u.line "
        "WHERE u.session_id = %s ORDER BY u.line"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [session.pk])
        rows_main = cursor.fetchall()
    progress_lines: dict[str, int] = {}
    for key, model, at, *rest in rows_main:
        counts, (line, kind, active, sidechain, turn) = tuple(rest[:5]), rest[5:]
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


def turn_usage(session: Session) -> list[tuple[int, Totals]]:
    """Each turn of the active branch with its messages' totals, in turn order."""
    record = Record._meta.db_table
    joins = f"JOIN {record} r ON r.session_id = u.session_id AND r.line = u.line"
    # The main conversation's messages: a subagent's, copied into progress records, are
    # the subagent's (session_usage_parts).
    where = "u.session_id = %s AND r.active AND r.turn IS NOT NULL AND r.kind = %s"
    turns: dict[int, Totals] = defaultdict(Totals)
    for turn, model, day, long, counts in _grouped("r.turn", joins, where, [session.pk, ASSISTANT]):
        turns[int(turn)].add(model, day, long, counts)
    return sorted(turns.items())


def lines_usage(session: Session, lines: set[int]) -> Totals:
    """The totals of the session's messages that start at these lines (a branch's own)."""
    totals = Totals()
    if not lines:
        return totals
    where = "u.session_id = %s AND u.line BETWEEN %s AND %s"
    params = [session.pk, min(lines), max(lines)]
    for line, model, day, long, counts in _grouped("u.line", "", where, params):
        if int(line) in lines:
            totals.add(model, day, long, counts)
    return totals


@dataclass
class FamilyMember:
    session: Session
    own: Totals  # what was spent in this session after it split from its parent
    inherited: int  # messages it holds that an ancestor holds too
    parent_session_id: str | None = None  # its parent's id, when the parent is in the family


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
            counts_n = (*counts, 1)
            day = at.date() if at else None
            long = counts[0] + counts[2] + counts[3] > LONG_CONTEXT
            own.add(model, day, long, counts_n)
            if key not in counted:
                counted.add(key)
                total.add(model, day, long, counts_n)
        parent = sessions.get(session.parent_id) if session.parent_id else None
        parent_id = str(parent.session_id) if parent is not None else None
        members.append(FamilyMember(session, own, inherited, parent_id))
    return FamilyUsage(members, total)


def _depth(session: Session, sessions: dict[int, Session]) -> int:
    depth, up, seen = 0, session.parent_id, {session.pk}
    while up in sessions and up not in seen:
        seen.add(up)
        depth += 1
        up = sessions[up].parent_id
    return depth
