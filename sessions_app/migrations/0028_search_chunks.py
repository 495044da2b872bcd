"""PostgreSQL: each text's folded copy is also kept cut into pieces of 2,000 characters,
each running 256 characters into the next (`SearchChunk`), with a trigram index of its
own. A search term of up to 256 characters is then checked with `LIKE` against the
pieces the index names instead of whole texts: a long tool output named by a common
trigram was read and matched whole (most of a slow search's time at 1 GB), where a
piece is 2,256 characters at most. The index also holds each piece's band of text ids
(`text_id / 1024`), so a common term's newest matches are looked for among the newest
texts' pieces only. Every text already stored is cut here; the search
pass cuts the texts it stores, and a text's pieces go with it (`ON DELETE CASCADE`).
The table exists on PostgreSQL only: SQLite's FTS5 index already finds terms this way.
"""

import django.db.models.deletion
from django.db import migrations, models

# The foreign key last: checked once for the whole table, and a deferred check pending
# for every row would forbid the index.
POSTGRES = [
    "CREATE TABLE sessions_app_searchchunk (text_id bigint NOT NULL, n integer NOT NULL, "
    "folded text{compression} NOT NULL, PRIMARY KEY (text_id, n))",
    "INSERT INTO sessions_app_searchchunk (text_id, n, folded) "
    "SELECT t.id, g.n, substr(t.folded, g.n * 2000 + 1, 2256) FROM sessions_app_searchtext t, "
    "generate_series(0, (length(t.folded) - 1) / 2000) AS g(n)",
    # btree_gin (trusted, like pg_trgm): the text's band of 1,024 ids in the same index,
    # so a search among the newest texts checks only their pieces (selectors.search).
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "CREATE INDEX search_chunk_folded_trgm ON sessions_app_searchchunk "
    "USING gin (folded gin_trgm_ops, (text_id / 1024))",
    "ALTER TABLE sessions_app_searchchunk ADD CONSTRAINT search_chunk_text "
    "FOREIGN KEY (text_id) REFERENCES sessions_app_searchtext (id) "
    "ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED",
]
POSTGRES_UNDO = ["DROP TABLE IF EXISTS sessions_app_searchchunk"]


def _run(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                "WHERE name = 'default_toast_compression'"
            )
            row = cursor.fetchone()
        compression = " COMPRESSION lz4" if row and row[0] else ""
        for sql in statements:
            schema_editor.execute(sql.replace("{compression}", compression))

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0027_hub")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SearchChunk",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "text_id",
                                "n",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("n", models.IntegerField()),
                        ("folded", models.TextField()),
                        (
                            "text",
                            models.ForeignKey(
                                db_index=False,
                                on_delete=django.db.models.deletion.DB_CASCADE,
                                related_name="+",
                                to="sessions_app.searchtext",
                            ),
                        ),
                    ],
                ),
            ],
            database_operations=[migrations.RunPython(_run(POSTGRES), _run(POSTGRES_UNDO))],
        ),
    ]
