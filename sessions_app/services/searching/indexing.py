"""One session's lines brought into the search index, a slice per transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import DatabaseError, connection, transaction

from ...formats import agent_for
from ...formats.agent import Agent
from ...formats.search_text import SEARCHABLE_KINDS, searchable
from ...models import Record, Session
from ..archive import session_open
from ..reading.lines import record_line
from ..roots import UnsafePath
from .texts import TextLinks

if TYPE_CHECKING:
    from . import SearchReport

# A slice: at most this many lines, or this many bytes of lines read from the file.
SLICE_LINES = 5_000
SLICE_BYTES = 16 << 20


def session_index(session: Session, report: SearchReport) -> None:
    """Index the session's lines the search index does not hold yet; never raises.

    The words of the texts it stored go into SQLite's index afterwards (`words`).
    """
    agent = agent_for(session.agent)
    counted = False
    while True:
        try:
            with transaction.atomic():
                done, lines = _slice(session, agent, report)
        except (OSError, UnsafePath) as exc:
            report.errors.append(f"{session.path}: not searchable yet ({exc})")
            return
        except _Behind:
            report.errors.append(
                f"{session.path}: the file changed since it was imported; "
                "it is indexed for search after the next import"
            )
            return
        except DatabaseError as exc:  # a lock held too long, a race with another pass
            report.errors.append(f"{session.path}: not searchable yet ({exc}); tried again later")
            return
        report.lines += lines
        if lines and not counted:
            report.sessions += 1
            counted = True
        if done:
            return


class _Behind(Exception):
    """A line is not what the index says: the import has to catch up first."""


def _slice(session: Session, agent: Agent, report: SearchReport) -> tuple[bool, int]:
    """Index the next slice of lines; (whether the session is now whole, lines covered)."""
    # Locked, so an import of the same file waits (SQLite: every transaction is
    # IMMEDIATE and holds the write lock from its start).
    state = (
        Session.objects.select_for_update()
        .filter(pk=session.pk)
        .values_list("search_lines", "line_count")
        .first()
    )
    if state is None:
        return True, 0
    low, count = state
    if low >= count:
        return True, 0
    high = min(count, low + SLICE_LINES)
    rows = list(
        Record.objects.filter(
            session=session,
            line__gte=low,
            line__lt=high,
            kind__in=SEARCHABLE_KINDS,
            search_text__isnull=True,
        )
        .order_by("line")
        .values_list("line", "uuid", "offset", "length", "digest", "kind")
    )
    links = TextLinks(session, [r[1] for r in rows if r[1]])
    read = 0
    with session_open(session) as f:
        for line, uuid, offset, length, digest, kind in rows:
            if links.known_link(line, uuid):
                continue
            if read >= SLICE_BYTES:
                high = line  # the rest is the next slice's
                break
            raw = record_line(f, offset, length, digest)
            read += length
            if raw is None:
                raise _Behind
            found = searchable(agent, raw, kind)
            if found is not None:
                links.add(line, uuid, kind, found)
    report.stored += len(links.new)
    report.text_bytes += links.text_bytes
    linked = links.store()
    report.linked += links.linked
    if linked:
        table = Record._meta.db_table
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {table} SET search_text_id = %s WHERE session_id = %s AND line = %s",  # noqa: S608
                [(text_id, session.pk, line) for text_id, line in linked],
            )
    Session.objects.filter(pk=session.pk).update(search_lines=high)
    return high >= count, high - low
