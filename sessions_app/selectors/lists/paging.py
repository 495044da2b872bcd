"""Pages of a session list read by a cursor on (sort key, pk): bounded, whatever the page.

A page reads at most `PAGE_SIZE` + 1 rows from the sort's index, starting at the cursor;
no list counts its sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import (
    Case,
    F,
    Q,
    QuerySet,
    When,
)
from django.db.models.functions import Coalesce

from ...models import ACTIVITY, TITLE_LIMIT, Session

SESSION_SORTS: dict[str, Any] = {
    "updated": ACTIVITY.desc(nulls_last=True),
    "made": Case(
        When(parent__isnull=False, then=Coalesce("made_at", "started_at")),
        default=F("started_at"),
    ).desc(nulls_last=True),
    # Undated last on both databases (PostgreSQL alone would put them first).
    "started": F("started_at").desc(nulls_last=True),
    "turns": "-turn_count",
    "title": "title",
    "tokens": "-output_tokens",
}


@dataclass(frozen=True)
class ListSort:
    """How a list sort seeks its pages: its key, its direction, and where its NULLs are.

    NULL keys always come last, after the dated ones. `index_nulls_last`: the index a
    sort walks on PostgreSQL orders NULLs last (a `DESC` index puts them first), so a
    seek orders its dated rows the way that index does and reads them from it.
    """

    key: Any
    descending: bool = True
    nullable: bool = False
    index_nulls_last: bool = False

    def ordered(self, forward: bool) -> list[Any]:
        """The order of the rows with a key, in list order (`forward`) or reversed."""
        key = F("sort_key")
        down = self.descending == forward
        if self.index_nulls_last:  # in the index's order, its NULLs aside, read from it
            by = key.desc(nulls_last=True) if down else key.asc(nulls_first=True)
        else:
            by = key.desc() if down else key.asc()
        return [by, "-id" if forward else "id"]


LIST_SORTS: dict[str, ListSort] = {
    "updated": ListSort(ACTIVITY, nullable=True, index_nulls_last=True),
    "made": ListSort(SESSION_SORTS["made"].expression, nullable=True, index_nulls_last=True),
    "started": ListSort(F("started_at"), nullable=True),
    "turns": ListSort(F("turn_count")),
    "title": ListSort(F("title"), descending=False),
    "tokens": ListSort(F("output_tokens")),
}
PAGE_SIZE = 50


@dataclass(frozen=True)
class Cursor:
    """A place in a sorted list: the sort key of a row (None: undated) and its pk."""

    key: Any
    pk: int


@dataclass
class SessionPage:
    """One page of a sorted list of sessions, and whether rows lie before and after it."""

    object_list: list[Session]
    has_previous: bool
    has_next: bool

    def __iter__(self) -> Any:
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)

    @property
    def has_other_pages(self) -> bool:
        """Whether the page needs a pager at all."""
        return self.has_previous or self.has_next


def list_sort(sort: str) -> ListSort:
    """The sort a list was asked for, or the default (last activity)."""
    return LIST_SORTS.get(sort, LIST_SORTS["updated"])


def cursor_text(session: Session) -> str:
    """A row's place in its list as a link carries it: `<pk>:<key>`, the key empty if NULL."""
    key = session.sort_key  # type: ignore[attr-defined]
    text = key.isoformat() if isinstance(key, datetime) else "" if key is None else str(key)
    return f"{session.pk}:{text}"


def parse_cursor(text: str, sort: str) -> Cursor | None:
    """The cursor a link carried for `sort`, or None if it is not one (a first page then)."""
    pk, _, key = text.partition(":")
    if not (pk.isascii() and pk.isdigit()) or len(pk) > 18:  # `"²".isdigit()` is true
        return None
    spec = list_sort(sort)
    try:
        if spec.nullable:
            value: Any = datetime.fromisoformat(key) if key else None
        elif spec.descending:  # turns, tokens
            value = int(key)
        else:
            value = key.replace("\x00", "")[:TITLE_LIMIT]
    except ValueError:
        return None
    if isinstance(value, datetime) and value.tzinfo is None:
        return None
    if isinstance(value, int) and not 0 <= value < 2**63:
        return None
    return Cursor(value, int(pk))


def _beyond(spec: ListSort, cursor: Cursor, forward: bool) -> Q:
    """The dated rows strictly after (`forward`) or before `cursor`, in list order.

    The key's own bound (`<=`) comes first so that an index starts its walk at the
    cursor instead of filtering every row before it.
    """
    smaller = spec.descending == forward
    near, far = ("lte", "lt") if smaller else ("gte", "gt")
    pk = "pk__lt" if forward else "pk__gt"
    return Q(**{f"sort_key__{near}": cursor.key}) & (
        Q(**{f"sort_key__{far}": cursor.key}) | Q(sort_key=cursor.key, **{pk: cursor.pk})
    )


def _seek(sessions: QuerySet, spec: ListSort, cursor: Cursor | None, forward: bool, n: int) -> list:
    """Up to `n` rows from `cursor` on (first row if None), in list order or reversed.

    Dated and undated rows are read by separate queries, each in an index's order and
    cut at `n`: an `OR IS NULL` would make the database read and sort them all.
    """
    sessions = sessions.annotate(sort_key=spec.key)
    dated = sessions.filter(sort_key__isnull=False) if spec.nullable else sessions
    undated = sessions.filter(sort_key__isnull=True)
    parts: list[QuerySet] = []
    if cursor is None or cursor.key is not None:
        if cursor is not None:
            dated = dated.filter(_beyond(spec, cursor, forward))
        parts.append(dated.order_by(*spec.ordered(forward)))
        if spec.nullable and forward:
            parts.append(undated.order_by("-id"))
    else:  # among the undated rows, which are last
        parts.append(undated.filter(**{"pk__lt" if forward else "pk__gt": cursor.pk}))
        parts[-1] = parts[-1].order_by("-id" if forward else "id")
        if not forward:
            parts.append(dated.order_by(*spec.ordered(forward)))
    rows: list[Session] = []
    for part in parts:
        if len(rows) < n:
            rows += part[: n - len(rows)]
    return rows


def seek_page(
    sessions: QuerySet,
    *,
    sort: str,
    after: Cursor | None = None,
    before: Cursor | None = None,
    size: int = PAGE_SIZE,
) -> SessionPage:
    """The page of `sessions` after `after` (or before `before`, or the first), sorted.

    Keyset paging: it reads at most `size + 1` rows wherever it is in the list and
    counts nothing. Ties are ordered by pk, newest first; undated rows come last.
    """
    spec = list_sort(sort)
    if before is not None:
        rows = _seek(sessions, spec, before, False, size + 1)
        if len(rows) > size:
            return SessionPage(rows[:size][::-1], has_previous=True, has_next=True)
        # Back at the start (rows may have come and gone meanwhile): the first page.
        after = None
    rows = _seek(sessions, spec, after, True, size + 1)
    return SessionPage(rows[:size], has_previous=after is not None, has_next=len(rows) > size)


def offset_page(
    sessions: QuerySet, *, sort: str, number: int, size: int = PAGE_SIZE
) -> SessionPage:
    """Page `number` counted from the first (for old `?page=N` links; small N only)."""
    spec = list_sort(sort)
    ordered = sessions.annotate(sort_key=spec.key).order_by(
        *(SESSION_SORTS.get(sort, SESSION_SORTS["updated"]), "-id")
    )
    start = (number - 1) * size
    rows = list(ordered[start : start + size + 1])
    return SessionPage(rows[:size], has_previous=number > 1, has_next=len(rows) > size)
