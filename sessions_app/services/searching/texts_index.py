"""PostgreSQL: the texts' trigram index built whole after an import that adds more than
twice what it holds.

GIN takes a text's trigrams when its row goes in, inside the import's transaction: for
a first import (or a hub's first push) that upkeep was the largest single part of the
import on PostgreSQL, and building the index once over the rows already in costs less
(0.50 s against 0.85 s for the same 4,572 texts). So an import pass that is to read more
than twice the bytes the index holds (and at least `BULK_MIN_BYTES`: a hub's first
batch) drops the index, imports, and builds it again before it returns. A search
meanwhile reads the texts without it: the same answers, found by a scan. The pieces'
index (`search_chunk_folded_trgm`) stays: the thread behind the import keeps it up on
the other core. Whatever stops a pass before it builds the index again (a crash, a
killed worker), the next search pass builds it (`texts_index_ensure`): the passes
without it hold an advisory lock, shared, and it is built only when none holds it. The
index is the one migration 0022 made, word for word.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connection, transaction
from django.db.models import Sum

from ...models import SearchText, Session

INDEX = "search_text_folded_trgm"
INDEX_MADE = (
    f"CREATE INDEX IF NOT EXISTS {INDEX} ON {SearchText._meta.db_table} "
    "USING gin (folded gin_trgm_ops)"
)
# Below this many new bytes the index is kept up row by row (a drop waits for the
# table's readers): a hub's batches of small files are 4-8 MB.
BULK_MIN_BYTES = 4 << 20
# Building the index whole costs about 0.6 of keeping it up row by row, per byte, and a
# build takes the rows already there too: it pays when they are under half the new ones.
BULK_OVER_HELD = 2
# The drop waits this long for searches and imports holding the table; past that the
# pass keeps the index up row by row, as before.
LOCK_WAIT = "2s"
# Memory for the build: GIN gathers the trigrams of as many texts as fit before writing.
BUILD_MEMORY = "256MB"
# The advisory lock that passes without the index share (a number of this module's own).
LOCK_KEY = 0x7E47_1D3C


def texts_index_bulk_wanted(new_bytes: int) -> bool:
    """Whether a pass reading `new_bytes` of session files should build the index whole."""
    if connection.vendor != "postgresql" or new_bytes < BULK_MIN_BYTES:
        return False
    held = Session.objects.aggregate(held=Sum("bytes_imported"))["held"] or 0
    return new_bytes > BULK_OVER_HELD * held


@contextmanager
def texts_index_bulk(new_bytes: int) -> Iterator[None]:
    """Around an import pass: without the index while it runs, when that is faster, and
    with it again once the pass's rows are in (by the last such pass to end)."""
    if connection.in_atomic_block or not texts_index_bulk_wanted(new_bytes):
        yield
        return
    # Shared: passes without the index may overlap; `texts_index_ensure` builds it only
    # when none holds this (the last one's end, or the next pass after a crash).
    if not _lock("SELECT pg_try_advisory_lock_shared(%s)"):
        yield
        return
    try:
        _index_drop()
        yield
    finally:
        _lock("SELECT pg_advisory_unlock_shared(%s)")
        texts_index_ensure()


def texts_index_ensure() -> None:
    """PostgreSQL: build the texts' trigram index if it is not there and no import pass is
    running without it; searches find the same texts either way, faster with it."""
    if connection.vendor != "postgresql" or connection.in_atomic_block or _index_there():
        return
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [LOCK_KEY])
            if not cursor.fetchone()[0]:
                return  # a pass without it is running: it builds the index when it ends
            cursor.execute(f"SET LOCAL maintenance_work_mem TO '{BUILD_MEMORY}'")
            cursor.execute(INDEX_MADE)
    except DatabaseError:  # another pass building it at the same moment: theirs stands
        pass


def _lock(sql: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(sql, [LOCK_KEY])
        return bool(cursor.fetchone()[0])


def _index_there() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [INDEX])
        return bool(cursor.fetchone()[0])


def _index_drop() -> None:
    """Drop the index if its table can be had within LOCK_WAIT (else it is kept up)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout TO '{LOCK_WAIT}'")
            cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")
    except DatabaseError:  # busy, or not the table's owner: kept up row by row
        pass
