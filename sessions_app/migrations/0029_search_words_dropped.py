"""PostgreSQL: the generated tsvector `words` (migration 0007) goes. No search has read it
since the ranking became the shortest texts first (selectors.search_postgres), yet every
text stored computed and kept it: about a third of the search pass's time on PostgreSQL
(99 MB of sessions: texts stored in 8.5-9.6 s with it, 5.8-6.1 s without, same run).
SQLite never had it."""

from django.db import migrations

POSTGRES = ["ALTER TABLE sessions_app_searchtext DROP COLUMN IF EXISTS words"]
POSTGRES_UNDO = [
    "ALTER TABLE sessions_app_searchtext ADD COLUMN IF NOT EXISTS words tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', left(text, 100000))) STORED",
]


def _run(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for sql in statements:
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0028_search_chunks")]

    operations = [migrations.RunPython(_run(POSTGRES), _run(POSTGRES_UNDO))]
