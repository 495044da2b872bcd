"""The thread that fills a words file (`words`) behind the import, and what callers ask of it."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from django.db import connection, transaction

from ...data_folder import SQLITE_SUFFIXES, private_file
from .filling import Filler
from .pieces_filling import PiecesFiller, pieces_round
from .words import PAGE_SIZE, TEXTS, WORDS_SCHEMA, behind, sqlite_uri, words_path, words_round

# Texts the thread waits for (a quarter of a second at most) before a round no one waits
# for: each round's commit writes an index segment, and tiny ones cost more to merge.
ROUND_LEAST = 1_000
JOURNAL_LIMIT = 16 << 20


class WordsFiller(Filler):
    """The thread filling one words file from what is committed in its main database."""

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            sqlite_uri(self.database, "ro"),
            uri=True,
            timeout=self.timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        path = words_path(self.database)
        db.execute("ATTACH DATABASE ? AS words", [str(path)])
        db.execute(f"PRAGMA words.page_size={PAGE_SIZE}")  # if it is made here
        db.execute("PRAGMA words.journal_mode=WAL")
        # As the main database: a commit does not wait for the disk, and the watermark is
        # in the same file, so a crash loses the last rounds whole, never half of one.
        db.execute("PRAGMA words.synchronous=NORMAL")
        # The log is used again from its start once the index holds it; not kept longer.
        db.execute(f"PRAGMA words.journal_size_limit={JOURNAL_LIMIT}")
        for sql in WORDS_SCHEMA:
            db.execute(sql.format(schema="words."))
        for suffix in SQLITE_SUFFIXES:
            private_file(Path(str(path) + suffix))
        self.inode = path.stat().st_ino
        return db

    def _file_changed(self) -> bool:
        try:
            return words_path(self.database).stat().st_ino != self.inode
        except FileNotFoundError:
            return True

    def _worth_a_round(self, db: sqlite3.Connection) -> bool:
        """Whether someone waits, or enough texts wait for their words."""
        if self.waiting:
            return True
        row = db.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {TEXTS} WHERE id > "  # noqa: S608
            "COALESCE((SELECT up_to FROM words.filled WHERE id = 1), 0) LIMIT ?)",
            [ROUND_LEAST],
        ).fetchone()
        return row[0] >= ROUND_LEAST

    def _round(self, db: sqlite3.Connection) -> int:
        db.execute("BEGIN IMMEDIATE")  # the main database is read-only here: words alone
        try:
            done = words_round(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        with self.lock:
            self.added += done
        return done


_FILLERS: dict[str, Filler] = {}
_FILLERS_LOCK = threading.Lock()


def _forget_after_fork() -> None:
    """A forked process (gunicorn's workers) has none of its parent's threads."""
    global _FILLERS_LOCK
    _FILLERS.clear()
    _FILLERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def _filler() -> Filler:
    """This process's thread for the default database (made on first use)."""
    database = str(connection.settings_dict["NAME"])
    with _FILLERS_LOCK:
        if database not in _FILLERS:
            if connection.vendor == "postgresql":
                _FILLERS[database] = PiecesFiller(connection.get_connection_params())
            else:
                timeout = float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5))
                _FILLERS[database] = WordsFiller(database, timeout)
        return _FILLERS[database]


def fillers_stop() -> None:
    """End this process's filling threads, closing their connections (a test database is
    then free to be dropped)."""
    with _FILLERS_LOCK:
        fillers = list(_FILLERS.values())
    for filler in fillers:
        filler.stop()


def words_kick() -> None:
    """Filled behind (SQLite's words, PostgreSQL's pieces): what the caller committed is
    filled as soon as can be."""
    if behind() and not connection.in_atomic_block:
        _filler().kick()


def words_fill(*, wait: bool = True) -> tuple[int, str | None]:
    """The words of what is stored put into the index (and deleted texts' taken out; on
    PostgreSQL, the queued texts' pieces cut); (texts looked at, the error that stopped it).
    `wait=False`: behind, at once."""
    if connection.vendor == "postgresql":
        if not behind():  # each text's pieces are cut as it is stored; any queued before too
            done = 0
            with transaction.atomic(), connection.cursor() as cursor:
                while added := pieces_round(cursor):
                    done += added
            return done, None
    elif connection.vendor != "sqlite":
        return 0, None
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            # The deleted texts the index has taken out are forgotten.
            cursor.execute(
                "DELETE FROM search_words_gone WHERE qid <= "
                "COALESCE((SELECT gone_to FROM words.filled WHERE id = 1), 0)"
            )
    if behind():
        filler = _filler()
        kick = filler.kick()
        return filler.wait(kick) if wait else (0, None)
    done = 0
    while True:
        with transaction.atomic():
            added = words_round(connection.connection)
        done += added
        if not added:
            return done, None
