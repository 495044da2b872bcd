"""Search reads prompts and notes as the page shows them (the CLI's tags as chips, a 1.0.x
slash command's JSON expansion decoded): the texts stored raw with such markup are dropped,
and the sessions holding them are looked at again by the next search pass, which reads
only the records that have no text yet."""

from django.db import migrations
from django.db.models import Q

# The parts whose texts come from user text (formats.search_text: prompt, note), and what
# user text holds when markup.shown_text reads it differently from the raw text.
USER_PARTS = ("prompt", "note")
MARKUP = Q(text__contains="</") | Q(text__contains="<command-contents>")


def index_again(apps, schema_editor):
    SearchText = apps.get_model("sessions_app", "SearchText")
    Record = apps.get_model("sessions_app", "Record")
    Session = apps.get_model("sessions_app", "Session")
    stale = SearchText.objects.filter(MARKUP, part__in=USER_PARTS)
    holders = Record.objects.filter(search_text__in=stale)
    sessions = list(holders.values_list("session_id", flat=True).distinct())
    holders.update(search_text=None)
    stale.delete()
    for start in range(0, len(sessions), 500):
        Session.objects.filter(pk__in=sessions[start : start + 500]).update(search_lines=0)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0020_search_notes")]

    operations = [migrations.RunPython(index_again, migrations.RunPython.noop)]
