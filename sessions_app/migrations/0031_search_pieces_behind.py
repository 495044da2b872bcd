"""PostgreSQL: the texts' pieces (`SearchChunk`, migration 0028) are cut behind the import,
by a thread of their own, as SQLite's words are (migration 0030).

Inserting the pieces into their trigram index was a third of a whole import on
PostgreSQL (its GIN index takes each piece's trigrams one text at a time). Now the import
queues each text it stores (`SearchChunkWaiting`, in the same transaction) and a thread
with a connection of its own cuts the queued texts' pieces, a round of many at a time,
taking them off the queue as it goes (services.searching.pieces_filling). A text deleted
while queued leaves the queue with it (`ON DELETE CASCADE`). The texts already stored
have their pieces: the queue starts empty. The table exists on PostgreSQL only.
"""

import django.db.models.deletion
from django.db import migrations, models

POSTGRES = [
    "CREATE TABLE sessions_app_searchchunkwaiting (text_id bigint NOT NULL PRIMARY KEY "
    "REFERENCES sessions_app_searchtext (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED)",
]
POSTGRES_UNDO = [
    # What is queued is cut now: the pieces of every text are there, as before.
    "INSERT INTO sessions_app_searchchunk (text_id, n, folded) "
    "SELECT t.id, g.n, substr(t.folded, g.n * 2000 + 1, 2256) "
    "FROM sessions_app_searchchunkwaiting w JOIN sessions_app_searchtext t ON t.id = w.text_id, "
    "generate_series(0, (length(t.folded) - 1) / 2000) AS g(n) ON CONFLICT DO NOTHING",
    "DROP TABLE IF EXISTS sessions_app_searchchunkwaiting",
]


def _run(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for sql in statements:
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0030_search_words_behind")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SearchChunkWaiting",
                    fields=[
                        (
                            "text",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.DB_CASCADE,
                                primary_key=True,
                                related_name="+",
                                serialize=False,
                                to="sessions_app.searchtext",
                            ),
                        ),
                    ],
                ),
            ],
            database_operations=[migrations.RunPython(_run(POSTGRES), _run(POSTGRES_UNDO))],
        ),
    ]
