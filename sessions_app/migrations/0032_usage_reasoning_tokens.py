from __future__ import annotations

from django.db import migrations, models


def recount_codex(apps, schema_editor) -> None:
    """Codex usage keys now name the response, not the file: count Codex sessions again."""
    session = apps.get_model("sessions_app", "Session")
    usage = apps.get_model("sessions_app", "Usage")
    usage.objects.filter(session__agent="codex").delete()
    session.objects.filter(agent="codex").update(usage_lines=0)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0031_search_pieces_behind"),
    ]

    operations = [
        migrations.AddField(
            model_name="usage",
            name="reasoning_tokens",
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunPython(recount_codex, migrations.RunPython.noop),
    ]
