"""Codex records are named by a hash chain now (`formats.codex.order`), not `<session>:<line>`:
every Codex file is read again from the start on the next import, so that a fork's copied
records get its source's uuids. Its stored state is made to differ from the file's (an
mtime no file has, nothing imported), which `importing.plan` reads as "read it all"."""

from django.db import migrations


def codex_read_again(apps, schema_editor):
    Session = apps.get_model("sessions_app", "Session")
    Session.objects.filter(agent="codex").update(file_mtime_ns=-1, bytes_imported=0)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0038_hub_fork_made_by"),
    ]

    operations = [
        migrations.RunPython(codex_read_again, migrations.RunPython.noop),
    ]
