"""A thread that fills a search index behind the import, and the kicks and waits callers
give it: SQLite's words (`words_filling.WordsFiller`), PostgreSQL's pieces
(`pieces_filling.PiecesFiller`). A subclass says how to connect, whether a round is worth
it, and what a round does."""

from __future__ import annotations

import logging
import threading
from typing import Any

logger = logging.getLogger("branchboard.importer")


class Filler:
    """The thread filling one index from what is committed in its database."""

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
        self.stopping = False

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

    def stop(self) -> None:
        """End the thread once its round is done; its connection is closed. The next kick
        starts another."""
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
            thread = self.thread
        if thread is not None:
            thread.join()
        with self.lock:
            self.stopping = False

    def _run(self) -> None:
        db: Any = None
        while True:
            with self.lock:
                # A thread that has nothing to do ends: the next kick starts another.
                asked = self.lock.wait_for(
                    lambda: self.asked > self.answered or self.stopping, timeout=30
                )
                if not asked or self.stopping:
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

    def _connect(self) -> Any:
        raise NotImplementedError

    def _file_changed(self) -> bool:
        """Whether the index's file was replaced under the thread's connection."""
        return False

    def _worth_a_round(self, db: Any) -> bool:
        raise NotImplementedError

    def _round(self, db: Any) -> int:
        raise NotImplementedError
