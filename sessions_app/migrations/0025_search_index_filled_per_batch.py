"""SQLite: the search index (FTS5 table `search_fts`) is filled by the search pass, once
per transaction for all the texts it stored (`INSERT … SELECT`), instead of by a trigger
per text: FTS5 writes what it holds to disk at every commit and savepoint, so a small
session per transaction made a tiny index segment each and most of the pass went into
merging them again. Deleting and changing a text still update the index by trigger."""

from django.db import migrations

SQLITE = ["DROP TRIGGER IF EXISTS search_text_ai"]
SQLITE_UNDO = [
    "CREATE TRIGGER search_text_ai AFTER INSERT ON sessions_app_searchtext BEGIN "
    "INSERT INTO search_fts(rowid, text) VALUES (new.id, new.text); END",
]


def _run(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0024_session_archive")]

    operations = [migrations.RunPython(_run(SQLITE), _run(SQLITE_UNDO))]
