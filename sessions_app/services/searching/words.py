"""SQLite's word index (FTS5, trigram) in a database file of its own, filled behind the import.

Filling the index is the costliest part of a first import (3-4 s per 100 MB of text,
in SQLite's C, which lets other threads run). In the main database file it held the
one write lock the import needs, so it ran after the import, on the same core. In a
file of its own (`<database>-words.sqlite3`, attached to every connection as `words`),
a thread with a connection of its own (`_Filler`) fills it while the import goes on,
on the other core, from what the import has committed: every text up to `filled.up_to`
has its words in the index, none after it has. A search is never wrong, at most behind.

The pages' connections attach the file read-only: a write transaction (`BEGIN
IMMEDIATE`) takes the write lock of every database attached for writing, so the import
would wait for the filler and the filler for the import. A text deleted from the main
file is queued with its words (`search_words_gone`, by trigger, migration 0030), and the
filler takes the words out if they went in (`held`: the texts whose words it holds).
Text ids are never given twice (`texts._new_ids`), so words a deleted text left behind
name no other text. The thread and what callers ask of it: `words_filling`.

`SEARCH_WORDS_BEHIND = False` (the tests, whose rows are never committed): the pages'
connections attach the file for writing and the same rounds run in their own
transaction, rolled back with it. `main.search_words.token` names the main database the
words file belongs to: a file left from another database (a test database made again,
a database put back from elsewhere) is emptied and filled again.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from ...data_folder import SQLITE_SUFFIXES, private_file, sqlite_file
from ...models.search import SearchChunkWaiting

# Texts (and deleted texts) per round: one transaction of the words file.
ROUND_ROWS = 5_000
# Bytes per page of a new words file: FTS5's merges rewrite much of the index, page by
# page; at 16 KiB the thread makes fewer, larger writes (its system time a third less
# importing 99 MB, docs/scaling.md).
PAGE_SIZE = 16_384
WORDS_SCHEMA = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS {schema}search_fts "
    "USING fts5(text, content='', tokenize='trigram')",
    "CREATE TABLE IF NOT EXISTS {schema}filled (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "up_to INTEGER NOT NULL, gone_to INTEGER NOT NULL, token TEXT NOT NULL)",
    # The texts whose words are in the index: only theirs are ever taken out.
    "CREATE TABLE IF NOT EXISTS {schema}held (id INTEGER PRIMARY KEY)",
]
TEXTS = "main.sessions_app_searchtext"


def words_path(database: str) -> Path:
    """The words file of the SQLite database at `database`."""
    path = Path(database)
    return path.with_name(f"{path.stem}-words{path.suffix or '.sqlite3'}")


def behind() -> bool:
    """Whether a thread fills the words (else each caller's own transaction does)."""
    return bool(getattr(settings, "SEARCH_WORDS_BEHIND", True))


def words_attach(sender: Any, connection: Any, **kwargs: Any) -> None:
    """On a new SQLite connection: attach its words file as `words`, made if need be."""
    if (name := sqlite_file(connection)) is None:
        return
    path = words_path(name)
    words_made(connection)
    raw = connection.connection
    mode = "ro" if behind() else "rw"
    raw.execute("ATTACH DATABASE ? AS words", [sqlite_uri(path, mode)])


def words_made(connection: Any, **kwargs: Any) -> None:
    """The words file of the SQLite `connection`'s database made if need be, and emptied if
    it holds another database's words; also after migrations (`post_migrate`), as a
    connection made before them could not tell."""
    if connection.vendor != "sqlite" or connection.connection is None:
        return
    raw = connection.connection
    try:
        mine = raw.execute("SELECT token FROM search_words WHERE id = 1").fetchone()
        gone = raw.execute("SELECT MAX(qid) FROM search_words_gone").fetchone()[0]
    except sqlite3.OperationalError:  # not migrated yet
        mine, gone = None, None
    path = words_path(str(connection.settings_dict["NAME"]))
    # By a connection of its own: outside any transaction of the caller's, and writable.
    timeout = float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5))
    made = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        made.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file's; an old one keeps its own
        made.execute("PRAGMA journal_mode=WAL")
        for sql in WORDS_SCHEMA:
            made.execute(sql.format(schema=""))
        # Looked at first without the write lock, which the thread holds while it fills.
        if mine is not None and _stranger(made, mine[0]):
            made.execute("BEGIN IMMEDIATE")
            if _stranger(made, mine[0]):
                made.execute("INSERT INTO search_fts(search_fts) VALUES ('delete-all')")
                made.execute("DELETE FROM held")
                # Texts deleted before: none of their words are here.
                made.execute(
                    "INSERT OR REPLACE INTO filled (id, up_to, gone_to, token) VALUES (1, 0, ?, ?)",
                    [gone or 0, mine[0]],
                )
            made.execute("COMMIT")
    finally:
        made.close()
    for suffix in SQLITE_SUFFIXES:
        private_file(Path(str(path) + suffix))


def _stranger(db: sqlite3.Connection, token: str) -> bool:
    """Whether the words file `db` is not (yet) the one of the database named `token`."""
    held = db.execute("SELECT token FROM filled WHERE id = 1").fetchone()
    return held is None or held[0] != token


def sqlite_uri(path: Path | str, mode: str) -> str:
    """A URI opening the SQLite file at `path` in `mode` ("ro", "rw"), whatever its name holds."""
    return f"file:{quote(str(path))}?mode={mode}"


def words_round(db: sqlite3.Connection) -> int:
    """One round in the caller's transaction (main and `words` attached, `words` writable):
    the words of texts deleted since taken out, those of up to ROUND_ROWS new texts put in.
    Returns how many texts (new or gone) it looked at; 0: nothing was left to do."""
    mine = db.execute("SELECT token FROM main.search_words WHERE id = 1").fetchone()
    if mine is None:
        return 0  # the main database is not migrated yet
    row = db.execute("SELECT up_to, gone_to, token FROM words.filled WHERE id = 1").fetchone()
    up_to, gone_to, token = row or (0, 0, "")
    if token != mine[0]:  # another database's words, or none yet
        db.execute("INSERT INTO words.search_fts(search_fts) VALUES ('delete-all')")
        db.execute("DELETE FROM words.held")
        up_to, gone_to, token = 0, 0, mine[0]
        last_gone = db.execute("SELECT MAX(qid) FROM main.search_words_gone").fetchone()[0]
        gone_to = last_gone or 0  # texts deleted before: none of their words are here
    gone, last_gone = db.execute(
        "SELECT COUNT(*), MAX(qid) FROM (SELECT qid FROM main.search_words_gone "
        "WHERE qid > ? ORDER BY qid LIMIT ?)",
        [gone_to, ROUND_ROWS],
    ).fetchone()
    if gone:
        # Only words that went in come out (`held`): taking out words a contentless index
        # was never given corrupts it.
        taken = (
            "FROM main.search_words_gone WHERE qid > ? AND qid <= ? "
            "AND id IN (SELECT id FROM words.held)"
        )
        db.execute(
            "INSERT INTO words.search_fts(search_fts, rowid, text) "
            f"SELECT 'delete', id, text {taken}",
            [gone_to, last_gone],
        )
        db.execute(
            f"DELETE FROM words.held WHERE id IN (SELECT id {taken})",  # noqa: S608
            [gone_to, last_gone],
        )
        gone_to = last_gone
    if gone == ROUND_ROWS:
        # More may be queued: every text deleted so far is weighed against this `up_to`
        # before it moves, or a text deleted before its words went in would look as if
        # they had (an id at or below the new `up_to`).
        _filled(db, up_to, gone_to, token)
        return gone
    new, last = db.execute(
        f"SELECT COUNT(*), MAX(id) FROM (SELECT id FROM {TEXTS} WHERE id > ? "  # noqa: S608
        "ORDER BY id LIMIT ?)",
        [up_to, ROUND_ROWS],
    ).fetchone()
    if new:
        db.execute(
            f"INSERT INTO words.search_fts(rowid, text) SELECT id, text FROM {TEXTS} "  # noqa: S608
            "WHERE id > ? AND id <= ?",
            [up_to, last],
        )
        db.execute(
            f"INSERT OR IGNORE INTO words.held (id) SELECT id FROM {TEXTS} "  # noqa: S608
            "WHERE id > ? AND id <= ?",
            [up_to, last],
        )
        up_to = last
    _filled(db, up_to, gone_to, token)
    return new + gone


def _filled(db: sqlite3.Connection, up_to: int, gone_to: int, token: str) -> None:
    db.execute(
        "INSERT OR REPLACE INTO words.filled (id, up_to, gone_to, token) VALUES (1, ?, ?, ?)",
        [up_to, gone_to, token],
    )


def words_waiting() -> int:
    """How many stored texts are not searchable yet: SQLite, those whose words are not in the
    index; PostgreSQL, those queued whose pieces are not cut."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {SearchChunkWaiting._meta.db_table}")  # noqa: S608
            return cursor.fetchone()[0]
    if connection.vendor != "sqlite":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM {TEXTS} WHERE id > "  # noqa: S608
            "COALESCE((SELECT up_to FROM words.filled WHERE id = 1), 0)"
        )
        return cursor.fetchone()[0]


def words_files(database: str) -> list[Path]:
    """The words file of `database` and SQLite's files beside it, as they are now."""
    base = str(words_path(database))
    return [Path(base + suffix) for suffix in SQLITE_SUFFIXES if os.path.exists(base + suffix)]
