"""Search across sessions: ranked hits, one per distinct text, grouped by session.

The words are found by the database: SQLite's FTS5 trigram index (`MATCH`, ranked
by bm25), or PostgreSQL's trigram index on the lower-cased text (`LIKE`, the shortest
texts first); either way each term is found as a case-insensitive substring,
so `parse_line(` and `ENOENT` are found where they occur, and a term matched more
than RANK_WINDOW times is ranked among its newest matches, the same rows on both.
A text copied into forks is one hit, shown in the session it came from first, with
how many other sessions hold it.
Snippets are plain text with match spans: whoever shows them escapes them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from datetime import time as day_time

from django.db import connection
from django.utils import timezone

from ...formats import SUMMARY, TITLE
from ...formats.search_text import PART_LABELS, query_terms, short_terms
from ...models import Record, Session
from ..lists import namespaces_of
from .postgres import postgres_rows
from .shown import count_copies, fill_snippets
from .turns import turn_rows

ROW_LIMIT = 400  # record rows fetched per search, best first
RANK_WINDOW = 1200  # a term matched more often is ranked among its newest matches
# Sessions a page shows: the best at once, the next ones a page further (`page`); every
# session among the ranked rows is on some page. Snippets, copies, links and markup
# are made for the page's hits only (most of a search's time was 50 sessions' worth).
SESSION_LIMIT = 20
MAX_PAGE = ROW_LIMIT  # no page past this one can hold a session (a row each at least)
HITS_PER_SESSION = 3  # hits shown per session (the rest: "only in this session")
WINDOW = 400  # characters of a text fetched around its first match
# What the page and the API show of a hit's session and link to it by: the rest of a
# session's row (its JSON columns above all) cost more to load than the search.
SHOWN = (
    *("session_id", "namespace", "path", "agent", "title", "updated_at", "abandoned"),
    *("is_subagent", "owner_session_id", "agent_name"),
    *("project__path", "project__folder", "project__agent", "project__namespace"),
)
COLUMNS = "r.session_id, r.line, r.search_text_id, r.turn, r.active, r.kind, r.sidechain"


@dataclass
class SearchQuery:
    """What was asked: the words and the filters."""

    text: str
    project: int | None = None
    agent: str = ""
    since: date | None = None
    until: date | None = None
    everything: bool = False  # abandoned branches too (subagents are always searched)
    session: int | None = None  # only in this session (pk)
    owner: str = ""  # on a hub: only the sessions this user pushed (any machine)
    machine: str = ""  # on a hub: only the sessions pushed from this machine
    page: int = 1  # which SESSION_LIMIT sessions of the ranked ones, from 1

    @property
    def terms(self) -> list[str]:
        return query_terms(self.text)


@dataclass
class Hit:
    """One matching text, in the record that shows it."""

    session_pk: int
    line: int
    turn: int | None
    active: bool
    kind: str
    part: str = ""
    snippet: str = ""
    marks: list[tuple[int, int]] = field(default_factory=list)
    sidechain: bool = False  # a subagent's record inline in its owner's file
    also_in: int = 0  # other sessions holding the same text (forks)
    url: str = ""  # where it is shown (set by the page)

    @property
    def part_label(self) -> str:
        return PART_LABELS.get(self.part, self.part)

    @property
    def abandoned(self) -> bool:
        """Whether it lies on a branch an in-CLI rewind left: a title or summary record is
        the session's, on no branch, though it is never on the active one either."""
        return not self.active and not self.sidechain and self.kind not in (TITLE, SUMMARY)

    @property
    def pieces(self) -> list[tuple[str, bool]]:
        """The snippet cut at its marks: (text, marked) pieces, for a template to escape."""
        out, at = [], 0
        for start, end in self.marks:
            if start > at:
                out.append((self.snippet[at:start], False))
            out.append((self.snippet[start:end], True))
            at = end
        if at < len(self.snippet):
            out.append((self.snippet[at:], False))
        return out


@dataclass
class SessionHits:
    session: Session
    hits: list[Hit]
    more: int = 0  # hits in this session beyond those shown
    url: str = ""  # where the session is shown (set by the page)
    heading: str = ""  # what the group is called, a subagent's by its owner (set by the page)


@dataclass
class SearchResults:
    query: SearchQuery
    groups: list[SessionHits] = field(default_factory=list)
    short: list[str] = field(default_factory=list)  # terms too short to search for
    truncated: bool = False  # more matched than were ranked
    windowed: bool = False  # a very common term: ranked among its newest matches only
    texts: int = 0  # distinct texts found
    sessions: int = 0  # sessions holding them, on every page
    seconds: float = 0.0

    @property
    def first(self) -> int:
        """The rank of the page's first session, from 1."""
        return (self.query.page - 1) * SESSION_LIMIT + 1

    @property
    def last(self) -> int:
        """The rank of the page's last session (`first` - 1 when it shows none)."""
        return self.first - 1 + len(self.groups)

    @property
    def next_page(self) -> int | None:
        """The page after this one, None if this one shows the last sessions."""
        return self.query.page + 1 if self.last < self.sessions else None


def search(query: SearchQuery) -> SearchResults:
    """The best hits of `query`, one per distinct text, grouped by session in rank order."""
    start = time.perf_counter()
    results = SearchResults(query, short=short_terms(query.text))
    terms = query.terms
    if not terms:
        return results
    rows, results.windowed = _ranked_rows(query, terms)
    results.truncated = len(rows) >= ROW_LIMIT
    seen: dict[int, Hit] = {}
    order: list[int] = []
    for session_pk, line, text_id, turn, active, kind, sidechain in rows:
        if text_id in seen:
            continue
        seen[text_id] = Hit(session_pk, line, turn, bool(active), kind, sidechain=bool(sidechain))
        order.append(text_id)
    results.texts = len(order)
    groups: dict[int, list[int]] = {}
    for text_id in order:
        groups.setdefault(seen[text_id].session_pk, []).append(text_id)
    results.sessions = len(groups)
    first = (query.page - 1) * SESSION_LIMIT
    shown_sessions = list(groups)[first : first + SESSION_LIMIT]
    shown = [t for pk in shown_sessions for t in groups[pk][:HITS_PER_SESSION]]
    fill_snippets(seen, shown, terms, WINDOW)
    count_copies(seen, shown)
    sessions = Session.objects.select_related("project").only(*SHOWN).in_bulk(shown_sessions)
    for pk in shown_sessions:
        ids = groups[pk]
        hits = [seen[t] for t in ids[:HITS_PER_SESSION]]
        results.groups.append(SessionHits(sessions[pk], hits, max(0, len(ids) - len(hits))))
    results.seconds = time.perf_counter() - start
    return results


def _ranked_rows(query: SearchQuery, terms: list[str]) -> tuple[list[tuple], bool]:
    """The best record rows, and whether they were ranked among the newest matches only.

    First the records that hold every term; then, for more than one term, the records
    of turns where every term occurs in some record of the turn.
    """
    filters, params = search_filters(query)
    rows, windowed = _record_rows(terms, filters, params)
    if len(terms) > 1 and len(rows) < ROW_LIMIT:
        held = {row[2] for row in rows}
        more = turn_rows(terms, COLUMNS, filters, params, ROW_LIMIT - len(rows))
        rows += [row for row in more if row[2] not in held]
    return rows, windowed


def search_filters(query: SearchQuery) -> tuple[str, list]:
    """The SQL conditions (" AND …", on record `r` and session `s`) of a query's filters."""
    where: list[str] = []
    params: list = []
    if not query.everything and query.session is None:
        # A subagent's work is part of its session, in its own file or inline; what an
        # in-CLI rewind abandoned is searched only when asked for.
        where.append("(r.active OR r.kind IN (%s, %s) OR r.sidechain OR s.is_subagent)")
        params.extend([TITLE, SUMMARY])
    if query.project is not None:
        where.append("s.project_id = %s")
        params.append(query.project)
    if query.agent:
        where.append("s.agent = %s")
        params.append(query.agent)
    if query.owner or query.machine:  # none named: "@", which no namespace is
        names = namespaces_of(owner=query.owner, machine=query.machine) or ["@"]
        where.append(f"s.namespace IN ({', '.join(['%s'] * len(names))})")
        params.extend(names)
    if query.session is not None:
        where.append("r.session_id = %s")
        params.append(query.session)
    if query.since is not None:
        where.append('r."timestamp" >= %s')
        params.append(_day_start(query.since))
    if query.until is not None and query.until < date.max:  # the last day has no end
        where.append('r."timestamp" < %s')
        params.append(_day_start(query.until + timedelta(days=1)))
    return "".join(f" AND {w}" for w in where), params


def _record_rows(terms: list[str], filters: str, params: list) -> tuple[list[tuple], bool]:
    """The best rows of records holding every term, ranked among the newest RANK_WINDOW
    matching rows when there are more (and whether there were): the same rows on both
    databases, ranked by each one's own measure (SQLite's bm25, PostgreSQL's shortest texts
    first)."""
    record, session = Record._meta.db_table, Session._meta.db_table
    if connection.vendor == "postgresql":
        return postgres_rows(terms, COLUMNS, filters, params, window=RANK_WINDOW, limit=ROW_LIMIT)
    match = " ".join('"' + t.replace('"', '""') + '"' for t in terms)
    base = (
        "FROM words.search_fts AS search_fts "
        f"JOIN {record} r ON r.search_text_id = search_fts.rowid "
        f"JOIN {session} s ON s.id = r.session_id WHERE search_fts MATCH %s{filters}"
    )
    with connection.cursor() as cursor:
        # Ranking every match of a very common term costs more than it tells: such a
        # term is ranked among its newest RANK_WINDOW matches (FTS5 walks its matches
        # newest first and stops there); a rarer one among all of them. One walk: the
        # newest matches with their rank, then the rest of the oldest text's rows (every
        # row of a text at the window's edge counts), ranked here.
        cursor.execute(
            f"SELECT {COLUMNS}, search_fts.rank {base} ORDER BY search_fts.rowid DESC LIMIT %s",
            [match, *params, RANK_WINDOW],
        )
        rows = cursor.fetchall()
        windowed = len(rows) >= RANK_WINDOW
        if windowed:
            # The edge text's other rows, by the records' index (its rank is its text's):
            # FTS5 would walk every match again to meet one rowid.
            edge, rank = rows[-1][2], rows[-1][-1]
            held = {(row[0], row[1]) for row in rows if row[2] == edge}
            cursor.execute(
                f"SELECT {COLUMNS} FROM {record} r JOIN {session} s ON s.id = r.session_id "  # noqa: S608
                f"WHERE r.search_text_id = %s{filters}",
                [edge, *params],
            )
            rows += [(*row, rank) for row in cursor.fetchall() if (row[0], row[1]) not in held]
    rows.sort(key=lambda row: (row[-1], row[0], row[1]))
    return [row[:-1] for row in rows[:ROW_LIMIT]], windowed


def _day_start(day: date) -> datetime | str | None:
    """The day's first moment, as the database compares it with a stored time (SQLite: the
    text it stores, so a record at midnight UTC is on its day, not before it)."""
    start = timezone.make_aware(
        datetime.combine(day, day_time.min), timezone.get_current_timezone()
    )
    return connection.ops.adapt_datetimefield_value(start)
