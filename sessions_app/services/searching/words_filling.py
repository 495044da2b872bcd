"""The thread that fills a words file (`words`) behind the import, and what callers ask of it."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

from django.db import connection, transaction

from ...data_folder import SQLITE_SUFFIXES, private_file
from .words import TEXTS, WORDS_SCHEMA, behind, sqlite_uri, words_path, words_round

logger = logging.getLogger("branchboard.importer")

# Texts the thread waits for (a quarter of a second at most) before a round no one waits
# for: each round's commit writes an index segment, and tiny ones cost more to merge.
ROUND_LEAST = 1_000
JOURNAL_LIMIT = 16 << 20


class _Filler:
    """The thread filling one words file from what is committed in its main database."""

    def __init__(self, database: str, timeout: float) -> None:
        self.database = database
        self.timeout = timeout
        self.lock = threading.Condition()
        self.asked = 0  # kicks so far
        self.answered = 0  # kicks whose commits are all filled
        self.added = 0  # texts (new or gone) looked at, ever
        self.waiting = 0  # callers waiting for a kick to be answered
        self.told = 0  # of `added`, what a caller was told of
        self.error: str | None = None
        self.thread: threading.Thread | None = None
        self.inode = 0  # of the words file the thread's connection has open

    def kick(self) -> int:
        """Fill what is committed now; returns the kick's number, for `wait`."""
        with self.lock:
            self.asked += 1
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="words", daemon=True)
                self.thread.start()
            self.lock.notify_all()
            return self.asked

    def wait(self, kick: int) -> tuple[int, str | None]:
        """Until what was committed at `kick` is filled: (texts filled since a caller was
        last told, the error that stopped it if any)."""
        with self.lock:
            self.waiting += 1
            self.lock.notify_all()
            try:
                self.lock.wait_for(lambda: self.answered >= kick)
            finally:
                self.waiting -= 1
            added, self.told = self.added - self.told, self.added
            return added, self.error

    def _run(self) -> None:
        db: sqlite3.Connection | None = None
        while True:
            with self.lock:
                # A thread that has nothing to do ends: the next kick starts another.
                if not self.lock.wait_for(lambda: self.asked > self.answered, timeout=30):
                    self.thread = None
                    break
                target = self.asked
            error = None
            try:
                if db is not None and self._file_changed():
                    db.close()  # the words file was deleted (or replaced): the new one
                    db = None
                db = db or self._connect()
                if not self._worth_a_round(db):
                    with self.lock:  # more commits come: one round for all of them
                        self.lock.wait_for(lambda: self.waiting > 0, timeout=0.25)
                        target = self.asked
                while self._round(db):
                    pass
            except Exception as exc:  # a lock held too long: the next kick tries again
                error = f"search words not all indexed yet ({exc}); tried again later"
                logger.warning(error)
                if db is not None:
                    db.close()
                db = None
            with self.lock:
                self.answered = target
                self.error = error
                self.lock.notify_all()
        if db is not None:
            db.close()

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


_FILLERS: dict[str, _Filler] = {}
_FILLERS_LOCK = threading.Lock()


def _forget_after_fork() -> None:
    """A forked process (gunicorn's workers) has none of its parent's threads."""
    global _FILLERS_LOCK
    _FILLERS.clear()
    _FILLERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def _filler() -> _Filler:
    database = str(connection.settings_dict["NAME"])
    with _FILLERS_LOCK:
        if database not in _FILLERS:
            timeout = float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5))
            _FILLERS[database] = _Filler(database, timeout)
        return _FILLERS[database]


def words_kick() -> None:
    """SQLite, words filled behind: what the caller committed is filled as soon as can be."""
    if connection.vendor == "sqlite" and behind() and not connection.in_atomic_block:
        _filler().kick()


def words_fill(*, wait: bool = True) -> tuple[int, str | None]:
    """SQLite: the words of what is stored put into the index (and deleted texts' taken
    out); (texts looked at, the error that stopped it). `wait=False`: behind, at once."""
    if connection.vendor != "sqlite":
        return 0, None
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
