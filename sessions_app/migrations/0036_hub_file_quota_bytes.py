# The bytes a namespace's quota counts: each pushed file's, indexed or not, and its staging file's.

from django.db import migrations, models
from django.db.models import F


def stored_is_size(apps, schema_editor):
    apps.get_model("sessions_app", "HubFile").objects.update(stored=F("size"))


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0035_archived_session_folder_files"),
    ]

    operations = [
        migrations.AddField(
            model_name="hubfile",
            name="stored",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="hubfile",
            name="staged",
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunPython(stored_is_size, migrations.RunPython.noop),
    ]
