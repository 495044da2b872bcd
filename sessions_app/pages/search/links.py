"""Where each search hit is shown: its session's page, the turn (or branch) that shows it,
and the words to mark; every hit of a page linked in a bounded number of queries."""

from __future__ import annotations

from urllib.parse import urlencode

from django.db import connection
from django.urls import reverse

from ...models import Record, Session
from ...selectors.family import AGENT_ID_RE, agent_id_of
from ...selectors.search import Hit, SearchResults
from ...session_refs import session_ref
from ...transcript.limits import PAGE_LIMITS


def session_url(session: Session) -> str:
    """Where a session's hits are shown: its transcript, or a subagent's own page (else
    its owner's); never the placeholder id an owner-less subagent file gets. "" for a row
    whose stored namespace makes no URL: listed unlinked, never a 500."""
    if not session.linkable:
        return ""
    if session.is_subagent:
        agent_id = agent_id_of(session)
        if session.owner_session_id and AGENT_ID_RE.match(agent_id):
            owner = session_ref(session.namespace, session.owner_session_id)
            return reverse("sessions:subagent", args=[owner, agent_id])
        if session.owner_session_id:
            owner = session_ref(session.namespace, session.owner_session_id)
            return reverse("sessions:session_detail", args=[owner])
    return reverse("sessions:session_detail", args=[session.ref])


def link_hits(results: SearchResults, q: str) -> None:
    """Set every group's and hit's `url`, in a bounded number of queries however many hits."""
    bases = {}
    for group in results.groups:
        group.url = bases[group.session.pk] = session_url(group.session)
    pairs = [(group.session, hit) for group in results.groups for hit in group.hits]
    for (_, hit), url in zip(pairs, hit_urls(pairs, q, bases), strict=True):
        hit.url = url


def hit_urls(
    pairs: list[tuple[Session, Hit]], q: str, bases: dict[int, str] | None = None
) -> list[str]:
    """Where each (session, hit) is shown: its turn in the transcript (or its branch), the
    match marked; two queries for all of them (one per hit cost most of a search's time)."""
    # An inline subagent sits in the turn of the call that started it.
    asked = [
        (session.pk, hit.line)
        for session, hit in pairs
        if not session.is_subagent and hit.turn is None and hit.sidechain
    ]
    before = _turns_before(asked)
    turns = [
        hit.turn if hit.turn is not None else before.get((session.pk, hit.line))
        for session, hit in pairs
    ]
    places = [
        (session.pk, turn, hit.line)
        for (session, hit), turn in zip(pairs, turns, strict=True)
        if turn and hit.active and not session.is_subagent
    ]
    deep = _deep_in_turns(places)
    # One `reverse` per session (`bases`: those known) and one encoding of the words:
    # per hit, they cost more than the queries.
    bases = dict(bases or {})
    for session, _ in pairs:
        if session.pk not in bases:
            bases[session.pk] = session_url(session)
    hl = urlencode({"hl": q})
    # A session with no page (`session_url` gives "") gives its hits no link either.
    return [
        bases[session.pk]
        + _hit_params(session, hit, turn, (session.pk, turn, hit.line) in deep, hl)
        if bases[session.pk]
        else ""
        for (session, hit), turn in zip(pairs, turns, strict=True)
    ]


def _hit_params(session: Session, hit: Hit, turn: int | None, deep: bool, hl: str) -> str:
    """The query (and anchor) of a hit's link within its session's page."""
    if session.is_subagent:
        return f"?{hl}"
    params: list[str] = []
    anchor = ""
    if hit.active and hit.turn is None and not hit.sidechain:
        # Injected context and output before the first prompt: shown among all records
        # only, and only by a page of the first turns: the one that starts at the hit.
        params += ["all=1", "after=0", f"from={hit.line}", "skip=0"]
    elif turn and hit.active and deep:
        # The turn's first page would end before the hit: open the page that starts at it.
        params += [f"after={turn - 1}", f"from={hit.line}", "skip=0"]
    elif turn:
        params.append(f"after={turn - 1}")
        anchor = f"#turn-{turn}"
    elif not hit.active:
        leaf = _abandoned_leaf(session, hit.line) if hit.abandoned else ""
        if leaf:
            params.append(urlencode({"leaf": leaf}))
        # Its turn-less records (and a title's) are shown among all records only.
        params.append("all=1")
    params.append(hl)
    return f"?{'&'.join(params)}{anchor}"


def _turns_before(asked: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """(session pk, line) -> the turn of the nearest numbered record before the line on the
    active branch, for every pair that has one: one query."""
    if not asked:
        return {}
    table = Record._meta.db_table
    each = (
        f"SELECT (SELECT turn FROM {table} WHERE session_id = %s AND line < %s "  # noqa: S608
        "AND active AND turn IS NOT NULL ORDER BY line DESC LIMIT 1)"
    )
    found: dict[tuple[int, int], int] = {}
    for part in _parts(asked):
        sql = " UNION ALL ".join(f"SELECT {i} AS i, ({each}) AS t" for i in range(len(part)))
        with connection.cursor() as cursor:
            cursor.execute(sql, [value for pair in part for value in pair])
            for i, turn in cursor.fetchall():
                if turn is not None:
                    found[part[i]] = turn
    return found


def _deep_in_turns(places: list[tuple[int, int, int]]) -> set[tuple[int, int, int]]:
    """The (session pk, turn, line) places so far into their turn that its first page may
    not reach them: one query for all."""
    if not places:
        return set()
    table = Record._meta.db_table
    limits = PAGE_LIMITS
    # Half a page's items at most are read: that many records before the hit already
    # make it deep, and fewer are all of them (counting a long turn's every record
    # before the hit was most of a search's links' time).
    each = (
        f"SELECT {{i}}, COUNT(*), SUM(length) FROM (SELECT length FROM {table} "  # noqa: S608
        "WHERE session_id = %s AND turn = %s AND active AND line < %s "
        f"LIMIT {limits.items // 2}) AS before"
    )
    deep: set[tuple[int, int, int]] = set()
    for part in _parts(places):
        sql = " UNION ALL ".join(each.format(i=i) for i in range(len(part)))
        with connection.cursor() as cursor:
            cursor.execute(sql, [value for place in part for value in place])
            for i, records, size in cursor.fetchall():
                # Half a page: what is shown weighs more than the lines it comes from, or less.
                if records >= limits.items // 2 or (size or 0) >= limits.page_bytes // 2:
                    deep.add(part[i])
    return deep


def _parts(items: list, size: int = 200) -> list[list]:
    """`items` in parts small enough for one statement (SQLite's compound-select limit)."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def _abandoned_leaf(session: Session, line: int) -> str:
    """The leaf of the abandoned branch a line most likely belongs to ("" if none)."""
    best = ""
    best_line = -1
    for branch in session.abandoned or []:
        first = branch.get("line", -1) if isinstance(branch, dict) else -1
        if isinstance(first, int) and best_line < first <= line and branch.get("leaf_uuid"):
            best, best_line = str(branch["leaf_uuid"]), first
    return best
