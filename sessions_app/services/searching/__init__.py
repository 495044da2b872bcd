"""The search index: the only writer of `SearchText`.

The import stores each record's text with the record, from its own read of the line
(`TextLinks`, `ImportReport.texts`). `search_refresh` then indexes the lines of every
session the import left behind (`Session.line_count` beyond `Session.search_lines`: a
big file a hub's push indexes in two requests, a database from before), a slice of lines
per transaction, and on SQLite waits for the words of every text stored since to be in
FTS5 (`words`: a file of their own, filled by a thread behind the import). A record whose
uuid already has a text (the same record copied into a fork) is linked to it from the
index alone, without reading its file; any other searchable record is read from its file,
checked against the index (length and CRC-32), and its text stored once. A session read
again from the start gets new record rows, so its texts are linked again; `texts_collect`
removes the texts no record holds any more.

Modules: `indexing` (one session's lines brought into the index), `texts` (texts stored
and linked), `words` (SQLite's word index, filled behind).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.template.defaultfilters import pluralize

from ...models import SearchText, Session
from ..progress import CatchUp
from .indexing import SLICE_LINES, session_index
from .texts import TextLinks
from .texts_index import texts_index_ensure
from .words import words_waiting
from .words_filling import words_fill, words_kick

__all__ = [
    "TRIGRAM_INDEXES",
    "SearchReport",
    "TextLinks",
    "search_refresh",
    "session_index",
    "texts_collect",
    "words_fill",
    "words_kick",
    "words_waiting",
]


@dataclass
class SearchReport:
    """What one pass did: sessions and lines indexed, texts stored and linked, problems."""

    sessions: int = 0
    lines: int = 0
    stored: int = 0
    linked: int = 0
    text_bytes: int = 0
    words: int = 0  # SQLite: texts whose words went into the index
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """E.g. "search: 1 session indexed, 12 texts stored, 0 copied records linked, ..."."""
        n = len(self.errors)
        words = f"{self.words} text{pluralize(self.words)} added to the word index, "
        return (
            f"search: {self.sessions} session{pluralize(self.sessions)} indexed, "
            f"{self.stored} text{pluralize(self.stored)} stored, "
            f"{self.linked} copied record{pluralize(self.linked)} linked, "
            f"{words if self.words else ''}{n} problem{pluralize(n)}"
        )


def search_refresh(
    *, session_ids: Iterable[int] | None = None, progress: CatchUp | None = None
) -> SearchReport:
    """Bring the search index up to date with the records; problems are reported, never fatal.

    `progress(done, total)` is told how many of the sessions behind are done.
    """
    report = SearchReport()
    behind = Session.objects.filter(search_lines__lt=F("line_count")).select_related("project")
    if session_ids is not None:
        session_ids = list(session_ids)
        behind = behind.filter(pk__in=session_ids)
    total = behind.count() if progress is not None else 0
    # Sessions before their subagents and forks: a fork then links its parent's texts.
    done = 0
    for batch in _batches(behind.order_by("is_subagent", "pk").iterator(chunk_size=500)):
        if progress is not None:
            progress(done, total)
        if len(batch) == 1:  # a long session: a transaction per slice of it
            session_index(batch[0], report)
        else:
            _batch_index(batch, report)
        done += len(batch)
    try:
        report.words, error = words_fill()
    except DatabaseError as exc:  # a lock held too long: the next pass goes on from there
        error = f"search words not all indexed yet ({exc}); tried again later"
    if error:
        report.errors.append(error)
    # The imports that named these sessions stored texts too (their one read): merged
    # after any pass that had sessions to look at, not after a watcher's idle one.
    if connection.vendor == "postgresql" and (session_ids is None or session_ids):
        texts_index_ensure()  # an import pass that went without it and stopped early
        _pending_merged()
    if progress is not None:
        progress(total, total)
    return report


# PostgreSQL: the trigram indexes (migrations 0022, 0028) keep new entries in a pending
# list until it passes 4 MB, and every search reads the whole list (about 6 ms per index
# at 4 MB, for a term found nowhere): the pass merges the lists when it is done.
TRIGRAM_INDEXES = ("search_text_folded_trgm", "search_chunk_folded_trgm")


def _pending_merged() -> None:
    """PostgreSQL: the trigram indexes' pending entries merged into them."""
    for index in TRIGRAM_INDEXES:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
        except DatabaseError:  # not the index's owner: searches read the list meanwhile
            continue


def _batches(sessions: Iterable[Session]) -> Iterator[list[Session]]:
    """Short sessions together, up to a slice's lines; a longer one alone."""
    batch: list[Session] = []
    lines = 0
    for session in sessions:
        behind = session.line_count - session.search_lines
        if batch and lines + behind > SLICE_LINES:
            yield batch
            batch, lines = [], 0
        batch.append(session)
        lines += behind
    if batch:
        yield batch


def _batch_index(batch: list[Session], report: SearchReport) -> None:
    """Index short sessions in one transaction (each in a savepoint of its own)."""
    try:
        with transaction.atomic():
            for session in batch:
                session_index(session, report)
    except DatabaseError as exc:  # a lock held too long, a race with another pass
        report.errors.extend(
            f"{session.path}: not searchable yet ({exc}); tried again later" for session in batch
        )


def texts_collect(text_ids: Iterable[int]) -> int:
    """Delete those texts that no record holds any more; returns how many went."""
    ids = sorted(set(text_ids))
    gone = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        held = SearchText.objects.filter(pk__in=chunk, record__isnull=False).values_list(
            "pk", flat=True
        )
        free = sorted(set(chunk) - set(held))
        if free:
            with connection.cursor() as cursor:
                # Raw: the ORM would first look for records to set null, and there are none.
                marks = ", ".join(["%s"] * len(free))
                table = SearchText._meta.db_table
                cursor.execute(f"DELETE FROM {table} WHERE id IN ({marks})", free)  # noqa: S608
                gone += cursor.rowcount
    return gone
