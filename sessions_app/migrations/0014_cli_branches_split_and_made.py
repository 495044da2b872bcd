"""Branches the CLI made (`/branch`), imported before: the turn they split at and when they
were made, as imports now find them (from the records they copied from their parent)."""

from django.db import migrations


def date_branches(apps, schema_editor):
    Session = apps.get_model("sessions_app", "Session")
    Record = apps.get_model("sessions_app", "Record")
    # The dashboard's own forks carry their split turn; a CLI branch imported before did not.
    found = Session.objects.filter(kind="branch", fork_turn__isnull=True, parent__isnull=False)
    for branch in found.iterator(chunk_size=100):
        copied = set(
            Record.objects.filter(session_id=branch.parent_id)
            .exclude(uuid="")
            .values_list("uuid", flat=True)
            .iterator(chunk_size=5000)
        )
        rows = Record.objects.filter(session_id=branch.pk).order_by("line")
        starts = rows.filter(starts_turn=True).values_list("uuid", flat=True)
        branch.fork_turn = sum(1 for uuid in starts if uuid in copied)
        own = rows.exclude(timestamp=None).values_list("uuid", "timestamp")
        made = next(
            (at for uuid, at in own.iterator(chunk_size=5000) if uuid not in copied), None
        )
        branch.made_at = made or branch.made_at
        branch.save(update_fields=["fork_turn", "made_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_titles_without_cli_markup"),
    ]

    operations = [migrations.RunPython(date_branches, migrations.RunPython.noop)]
