"""PostgreSQL: each text is also kept lower-cased (a generated column, `folded`), and the
trigram index is on it: a match is checked with `LIKE` on the folded copy instead of
`ILIKE`, which lower-cases the whole text again for every candidate the index names
(most of a search's time on common trigrams). The folded copy is compressed with lz4
where the server has it: reading texts back (decompressing) is what a common term's
newest-first walk spends its time on. The full-text `words` index goes: no
search looks words up any more (`words` stays, for ranking). SQLite is unchanged."""

from django.db import migrations

POSTGRES = [
    "ALTER TABLE sessions_app_searchtext ADD COLUMN folded text{compression} "
    "GENERATED ALWAYS AS (lower(text)) STORED",
    "CREATE INDEX search_text_folded_trgm ON sessions_app_searchtext "
    "USING gin (folded gin_trgm_ops)",
    "DROP INDEX IF EXISTS search_text_trgm",
    "DROP INDEX IF EXISTS search_text_words",
]
POSTGRES_UNDO = [
    "CREATE INDEX IF NOT EXISTS search_text_words ON sessions_app_searchtext USING gin (words)",
    "CREATE INDEX IF NOT EXISTS search_text_trgm ON sessions_app_searchtext "
    "USING gin (text gin_trgm_ops)",
    "DROP INDEX IF EXISTS search_text_folded_trgm",
    "ALTER TABLE sessions_app_searchtext DROP COLUMN IF EXISTS folded",
]


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
    dependencies = [("sessions_app", "0021_search_shown_prompts")]

    operations = [migrations.RunPython(_run(POSTGRES), _run(POSTGRES_UNDO))]
