from django.db import migrations, models

# formats.file_history.RECORD_TYPES, as it is when this migration was written.
FILE_BACKUP_TYPES = ("file-history-snapshot", "file-history-delta")


def flag_sessions_with_backups(apps, schema_editor):
    """Sessions imported before the flag existed: set it from their records, once."""
    Session = apps.get_model("sessions_app", "Session")
    Record = apps.get_model("sessions_app", "Record")
    with_backups = Record.objects.filter(raw_type__in=FILE_BACKUP_TYPES).values("session_id")
    Session.objects.filter(pk__in=with_backups).update(file_backups=True)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0018_skipped_files"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="file_backups",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(flag_sessions_with_backups, migrations.RunPython.noop),
    ]
