"""Usage kept up to date with each import: the only writer of `Usage` rows.

The import counts the usage of the lines it reads from its own read of each line
(`usage_store`; Claude Code and Qwen Code). `usage_refresh` reads the assistant records
(and the progress records that may carry a subagent's messages, `formats.usage`) of
every session beyond its `usage_lines` (each checked against the index: length and
CRC-32) and keeps one row per API message of the session (`formats.usage`: the
message's key, its model, and the largest count of each kind its records carry). A
message whose records straddle two passes is merged into its row. A session read again
from the start loses its rows (`usage_forget`) and is counted again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO

from django.db import DatabaseError, connection, transaction
from django.db.models import F, OuterRef, Subquery
from django.template.defaultfilters import pluralize

from ...formats import ASSISTANT, PROGRESS, agent_for
from ...formats.common import load
from ...formats.usage import MessageUsage
from ...models import Record, Session, Usage
from ..archive import session_open
from ..progress import CatchUp
from ..reading.lines import record_line
from ..roots import UnsafePath

SLICE_LINES = 20_000
# A record's stamp as the database gives it (SQLite: its text; PostgreSQL: a datetime).
Stamp = str | datetime | None


@dataclass
class UsageReport:
    sessions: int = 0
    messages: int = 0
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """E.g. "usage: 1 session counted, 12 assistant records read"."""
        return (
            f"usage: {self.sessions} session{pluralize(self.sessions)} counted, "
            f"{self.messages} assistant record{pluralize(self.messages)} read"
        )


class _Behind(Exception):
    """A line is not what the index says: the import has to catch up first."""


def usage_refresh(
    *, session_ids: Iterable[int] | None = None, progress: CatchUp | None = None
) -> UsageReport:
    """Count the usage of every session's lines not counted yet; problems reported, never fatal.

    `progress(done, total)` is told how many of the sessions behind are done.
    """
    report = UsageReport()
    behind = Session.objects.filter(usage_lines__lt=F("line_count")).select_related("project")
    if session_ids is not None:
        behind = behind.filter(pk__in=list(session_ids))
    total = behind.count() if progress is not None else 0
    for done, session in enumerate(behind.order_by("pk").iterator(chunk_size=500)):
        if progress is not None:
            progress(done, total)
        try:
            counted = False
            while True:
                with transaction.atomic():
                    done, seen = _slice(session, report)
                if seen and not counted:
                    report.sessions += 1
                    counted = True
                if done:
                    break
        except (OSError, UnsafePath) as exc:
            report.errors.append(f"{session.path}: usage not counted yet ({exc})")
        except _Behind:
            report.errors.append(
                f"{session.path}: the file changed since it was imported; "
                "its usage is counted after the next import"
            )
        except DatabaseError as exc:  # a lock held too long, a race with another pass
            report.errors.append(
                f"{session.path}: usage not counted yet ({exc}); tried again later"
            )
    if progress is not None:
        progress(total, total)
    return report


def usage_forget(session: Session) -> None:
    """The session is read again from the start: its usage is counted again.

    A message it held first, which another session of its namespace holds too, now
    counts there.
    """
    owned = list(Usage.objects.filter(session=session, copy=False).values_list("key", flat=True))
    Usage.objects.filter(session=session).delete()
    for start in range(0, len(owned), 500):
        chunk = owned[start : start + 500]
        # Each to the session made first among those of its namespace holding it (as
        # `usage_store` counts; another machine's message under the same key is its own).
        ours = Usage.objects.filter(session__namespace=session.namespace)
        lowest = ours.filter(key=OuterRef("key")).order_by("session_id").values("session_id")
        ours.filter(key__in=chunk, copy=True, session_id=Subquery(lowest[:1])).update(copy=False)


def _slice(session: Session, report: UsageReport) -> tuple[bool, int]:
    state = (
        Session.objects.select_for_update()
        .filter(pk=session.pk)
        .values_list("usage_lines", "line_count")
        .first()
    )
    if state is None or state[0] >= state[1]:
        return True, 0
    low, count = state
    high = min(count, low + SLICE_LINES)
    agent = agent_for(session.agent)
    reader = agent.usage_reader(str(session.session_id)) if agent.usage_reader else None
    usage_of = agent.usage_of if reader is None else reader.read
    found: dict[str, tuple[int, Stamp, MessageUsage]] = {}
    with session_open(session) as f, connection.cursor() as cursor:
        if reader is not None and low:
            # What the lines before this slice told the reader (the model of the turn).
            earlier = session.records.filter(line__lt=low, raw_type__in=reader.types)
            for offset, length, digest in earlier.order_by("line").values_list(
                "offset", "length", "digest"
            ):
                reader.read(_checked(f, offset, length, digest))
        # Raw: the ORM would make a datetime of every row's stamp, and a slice reads
        # thousands of rows to keep a few; the stamp goes back to the database as it came.
        cursor.execute(*_rows_sql(session.pk, low, high, reader.types if reader else ()))
        for line, offset, length, digest, at, kind in cursor.fetchall():
            raw = record_line(f, offset, length, digest)
            if raw is None:
                raise _Behind
            if kind == PROGRESS and b'"agent_progress"' not in raw:
                continue  # hook and command output: most progress records, and no usage
            data = load(raw)
            usage = usage_of(data) if isinstance(data, dict) else None
            if usage is None:
                continue
            report.messages += 1
            if usage.key in found:
                first, first_at, seen = found[usage.key]
                found[usage.key] = (first, first_at, seen.merged(usage))
            else:
                found[usage.key] = (line, at, usage)
    usage_store(session, found)
    Session.objects.filter(pk=session.pk).update(usage_lines=high)
    return high >= count, len(found)


def _rows_sql(pk: int, low: int, high: int, types: Iterable[str]) -> tuple[str, list]:
    """The records of lines `low` to `high` that may carry usage, in order of line."""
    quote = connection.ops.quote_name
    columns = ", ".join(
        quote(c) for c in ("line", "offset", "length", "digest", "timestamp", "kind")
    )
    kinds = [ASSISTANT, PROGRESS]
    wanted = "kind IN (%s, %s)"
    if types := sorted(types):
        wanted = f"({wanted} OR raw_type IN ({', '.join(['%s'] * len(types))}))"
    sql = (
        f"SELECT {columns} FROM {Record._meta.db_table} "  # noqa: S608
        f"WHERE session_id = %s AND line >= %s AND line < %s AND {wanted} ORDER BY line"
    )
    return sql, [pk, low, high, *kinds, *types]


def _checked(f: BinaryIO, offset: int, length: int, digest: int) -> dict:
    """The record the index names at `offset`, parsed ({} when it is no object)."""
    raw = record_line(f, offset, length, digest)
    if raw is None:
        raise _Behind
    data = load(raw)
    return data if isinstance(data, dict) else {}


def usage_store(session: Session, found: dict[str, tuple[int, Stamp, MessageUsage]]) -> None:
    """Insert the new messages (key: first line, its record's stamp, usage); merge those the
    session already holds into their rows. The import's one read of each line calls it too."""
    if not found:
        return
    table = Usage._meta.db_table
    held: dict[str, tuple] = {}
    elsewhere: dict[str, int] = {}  # key -> the lowest other session holding it
    keys = sorted(found)
    columns = (
        "u.input_tokens, u.output_tokens, u.cache_write_tokens, u.cache_read_tokens, "
        "u.cache_write_1h_tokens, u.reasoning_tokens"
    )
    # Raw, one query for both: what this session holds, and which keys another session of
    # its namespace holds (a fork's copies; on a hub, another machine's message under the
    # same key is no copy of this one). It runs for every file the import reads, where
    # the ORM's two cost more than the rows they find.
    sessions = Session._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            cursor.execute(
                f'SELECT u."key", u.session_id, {columns} FROM {table} u '  # noqa: S608
                f"JOIN {sessions} s ON s.id = u.session_id "
                f'WHERE u."key" IN ({", ".join(["%s"] * len(chunk))}) AND s.namespace = %s',
                [*chunk, session.namespace],
            )
            for row in cursor.fetchall():
                if row[1] == session.pk:
                    held[row[0]] = (row[0], *row[2:])
                else:
                    elsewhere[row[0]] = min(row[1], elsewhere.get(row[0], row[1]))
    inserts, updates = [], []
    # The message counts where it was first: the session made first (its source, for a
    # fork or a rewind's backup), whichever was counted first. A source read again from
    # the start (a rewind, its undo) so takes back what its copies held meanwhile.
    reclaimed = sorted(k for k, other in elsewhere.items() if k not in held and session.pk < other)
    for key, (line, at, u) in found.items():
        counts = (u.input, u.output, u.cache_write, u.cache_read, u.cache_write_1h, u.reasoning)
        if key in held:
            merged = tuple(max(a, b) for a, b in zip(held[key][1:], counts, strict=True))
            updates.append((*merged, session.pk, key))
        else:
            copy = key in elsewhere and elsewhere[key] < session.pk
            inserts.append((session.pk, line, key, u.model, at, *counts, copy))
    names = (
        'session_id, line, "key", model, at, input_tokens, output_tokens, '
        'cache_write_tokens, cache_read_tokens, cache_write_1h_tokens, reasoning_tokens, "copy"'
    )
    for start in range(0, len(reclaimed), 500):
        Usage.objects.filter(
            key__in=reclaimed[start : start + 500], copy=False, session__namespace=session.namespace
        ).exclude(session=session).update(copy=True)
    with connection.cursor() as cursor:
        if inserts and connection.vendor == "postgresql":
            # COPY: one stream, where executemany runs one statement per row.
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in inserts:
                    copy.write_row(row)
        elif inserts:
            cursor.executemany(
                f'INSERT INTO {table} (session_id, line, "key", model, at, input_tokens, '  # noqa: S608
                "output_tokens, cache_write_tokens, cache_read_tokens, cache_write_1h_tokens, "
                'reasoning_tokens, "copy") VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)',
                inserts,
            )
        if updates:
            cursor.executemany(
                f"UPDATE {table} SET input_tokens = %s, output_tokens = %s, "  # noqa: S608
                "cache_write_tokens = %s, cache_read_tokens = %s, cache_write_1h_tokens = %s, "
                'reasoning_tokens = %s WHERE session_id = %s AND "key" = %s',
                updates,
            )
