# A search text is shared by uuid within one namespace only: on a hub, another machine's
# record with the same uuid is another record (it may say anything). What was linked or
# counted across namespaces before is undone: the hub's sessions are indexed for search
# again, and the copies of usage are decided again within each namespace.

from django.db import migrations, models

# Not Django's AddField: on SQLite that copies the whole table into a new one (a column
# with a default), which also forgets the largest id the table ever held, which the
# search words rely on. A constant default is added in place on both databases.
ADD_COLUMN = 'ALTER TABLE "sessions_app_searchtext" ADD COLUMN "namespace" varchar(130) DEFAULT \'\' NOT NULL'
DROP_COLUMN = 'ALTER TABLE "sessions_app_searchtext" DROP COLUMN "namespace"'


def keyed_again(apps, schema_editor):
    """The hub's sessions read into the search index again, each namespace's texts its own;
    a message counted once per namespace."""
    Session = apps.get_model("sessions_app", "Session")
    Record = apps.get_model("sessions_app", "Record")
    Usage = apps.get_model("sessions_app", "Usage")
    pushed = Session.objects.exclude(namespace="")
    if not pushed.exists():
        return
    Record.objects.filter(session__in=pushed, search_text__isnull=False).update(search_text=None)
    pushed.update(search_lines=0)
    usage, session = Usage._meta.db_table, Session._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f'UPDATE {usage} SET "copy" = (id <> (SELECT MIN(u2.id) FROM {usage} u2 '
            f"JOIN {session} s2 ON s2.id = u2.session_id "
            f'WHERE u2."key" = {usage}."key" AND s2.namespace = '
            f"(SELECT s.namespace FROM {session} s WHERE s.id = {usage}.session_id))) "
            f'WHERE "copy" OR session_id IN (SELECT id FROM {session} WHERE namespace <> %s)',
            [""],
        )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0036_hub_file_quota_bytes"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="searchtext",
            name="unique_search_text_uuid",
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(ADD_COLUMN, DROP_COLUMN)],
            state_operations=[
                migrations.AddField(
                    model_name="searchtext",
                    name="namespace",
                    field=models.CharField(blank=True, default="", max_length=130),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name="searchtext",
            constraint=models.UniqueConstraint(
                condition=models.Q(("uuid", ""), _negated=True),
                fields=("namespace", "uuid"),
                name="unique_search_text_namespace_uuid",
            ),
        ),
        migrations.RunPython(keyed_again, migrations.RunPython.noop),
    ]
