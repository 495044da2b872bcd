"""PostgreSQL: the thread that cuts the queued texts' pieces behind the import.

The import stores each text with its record and queues it (`SearchChunkWaiting`, in the
same transaction); this thread, with a connection of its own, cuts the pieces of many
queued texts at a time (`SearchChunk`, whose trigram index is most of what a text costs
to store) and takes them off the queue in the same transaction, while the import goes on
on the other core. It answers the same kicks and waits as SQLite's words (`words_filling`).

Rows are taken with `SKIP LOCKED`, so two processes filling (the dashboard and a command)
never take the same text, and the text itself is locked (`KEY SHARE`) before its pieces
are made: a text being deleted meanwhile is skipped, and leaves the queue with it.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from ...models.search import SearchChunkWaiting, SearchText
from .filling import Filler
from .texts import PIECES_CUT

ROUND_TEXTS = 2_000  # texts whose pieces one round cuts
# Texts the thread waits for (a quarter of a second at most) before a round no one waits for.
ROUND_LEAST = 500

WAITING = SearchChunkWaiting._meta.db_table
ROUND = (
    f"WITH picked AS (SELECT w.text_id FROM {WAITING} w "  # noqa: S608
    f"JOIN {SearchText._meta.db_table} t ON t.id = w.text_id ORDER BY w.text_id LIMIT %s "
    "FOR UPDATE OF w SKIP LOCKED FOR KEY SHARE OF t SKIP LOCKED), "
    f"taken AS (DELETE FROM {WAITING} w USING picked WHERE w.text_id = picked.text_id "
    "RETURNING w.text_id), "
    f"new AS (SELECT t.id, t.folded FROM taken JOIN {SearchText._meta.db_table} t "
    "ON t.id = taken.text_id), "
    f"cut AS ({PIECES_CUT} RETURNING 1) "
    "SELECT COUNT(*) FROM taken"
)


def pieces_round(cursor: Any, texts: int = ROUND_TEXTS) -> int:
    """Cut the pieces of up to `texts` queued texts in the caller's transaction and take them
    off the queue; how many it took (0: none was left, or every one is locked elsewhere)."""
    cursor.execute(ROUND, [texts])
    return cursor.fetchone()[0]


class PiecesFiller(Filler):
    """The thread cutting one PostgreSQL database's queued texts."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(str(params.get("dbname", "")), timeout=0)
        self.params = params

    def _connect(self) -> Any:
        # Not Django's connection of this thread: one the thread owns and closes.
        db = connection.get_new_connection(self.params)
        db.autocommit = False
        return db

    def _file_changed(self) -> bool:
        return False

    def _worth_a_round(self, db: Any) -> bool:
        if self.waiting:
            return True
        with db.cursor() as cursor:
            cursor.execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {WAITING} LIMIT %s) AS w",  # noqa: S608
                [ROUND_LEAST],
            )
            waiting = cursor.fetchone()[0]
        db.rollback()
        return waiting >= ROUND_LEAST

    def _round(self, db: Any) -> int:
        try:
            with db.cursor() as cursor:
                # As the import's own: the pieces are cut again from the texts if lost.
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
                done = pieces_round(cursor)
        except BaseException:
            db.rollback()
            raise
        db.commit()
        with self.lock:
            self.added += done
        return done
