from django.db import migrations


def _run(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    """PostgreSQL: whole words are looked up in an index before any substring scan."""

    dependencies = [("sessions_app", "0008_usage")]

    operations = [
        migrations.RunPython(
            _run("CREATE INDEX search_text_words ON sessions_app_searchtext USING gin (words)"),
            _run("DROP INDEX IF EXISTS search_text_words"),
        )
    ]
