"""Search finds notes now (a local command's output, hook messages, task notifications,
messages typed while a tool ran): every session's lines are looked at again by the next
search pass, which reads only the records that have no text yet."""

from django.db import migrations


def index_again(apps, schema_editor):
    Session = apps.get_model("sessions_app", "Session")
    Session.objects.filter(search_lines__gt=0).update(search_lines=0)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0019_session_file_backups")]

    operations = [migrations.RunPython(index_again, migrations.RunPython.noop)]
