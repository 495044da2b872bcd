"""SQLite: the search index's words (FTS5) move to a database file of their own, filled behind
the import by a thread of their own (services.searching.words).

The import now stores each record's search text with the record, from its one read of
the line; the words of those texts go into the index in the words file, on the other
core, while the import goes on. Here: the main file's FTS5 table and its triggers go; a
token names this database to its words file; a deleted text is queued with its text
(a contentless index is told exactly which words to take out), until the words file has
taken its words out."""

import secrets

from django.db import migrations

SQLITE = [
    "DROP TRIGGER IF EXISTS search_text_ai",
    "DROP TRIGGER IF EXISTS search_text_ad",
    "DROP TRIGGER IF EXISTS search_text_au",
    "DROP TABLE IF EXISTS search_fts",
    "CREATE TABLE search_words (id INTEGER PRIMARY KEY CHECK (id = 1), token TEXT NOT NULL)",
    "CREATE TABLE search_words_gone (qid INTEGER PRIMARY KEY AUTOINCREMENT, "
    "id INTEGER NOT NULL, text TEXT NOT NULL)",
    "CREATE TRIGGER search_text_gone AFTER DELETE ON sessions_app_searchtext BEGIN "
    "INSERT INTO search_words_gone (id, text) VALUES (old.id, old.text); END",
]
SQLITE_UNDO = [
    "DROP TRIGGER IF EXISTS search_text_gone",
    "DROP TABLE IF EXISTS search_words_gone",
    "DROP TABLE IF EXISTS search_words",
    # As migrations 0007 and 0025 left it, the words of every text in it again.
    "CREATE VIRTUAL TABLE search_fts USING fts5("
    "text, content='sessions_app_searchtext', content_rowid='id', tokenize='trigram')",
    "INSERT INTO search_fts(search_fts) VALUES ('rebuild')",
    "CREATE TRIGGER search_text_ad AFTER DELETE ON sessions_app_searchtext BEGIN "
    "INSERT INTO search_fts(search_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER search_text_au AFTER UPDATE ON sessions_app_searchtext BEGIN "
    "INSERT INTO search_fts(search_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO search_fts(rowid, text) VALUES (new.id, new.text); END",
]


def _run(statements: list[str], token: bool):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        for sql in statements:
            schema_editor.execute(sql)
        if token:
            schema_editor.execute(
                "INSERT INTO search_words (id, token) VALUES (1, %s)", [secrets.token_hex(16)]
            )

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0029_search_words_dropped")]

    operations = [migrations.RunPython(_run(SQLITE, True), _run(SQLITE_UNDO, False))]
