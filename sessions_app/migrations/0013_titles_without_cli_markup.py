"""Titles taken from a first prompt, and abandoned branches' prompts, without the CLIs'
markup (`<command-name>`, `<task-notification>`, ...): the rule imports now follow."""

from django.db import migrations

from sessions_app.formats.markup import has_markup, title_text

TITLE_LIMIT = 300


def retitle(apps, schema_editor):
    Session = apps.get_model("sessions_app", "Session")
    found = Session.objects.filter(first_prompt__contains="</") | Session.objects.filter(
        abandoned__icontains="</"
    )
    for session in found.iterator(chunk_size=500):
        changed = []
        if not session.custom_title and not session.ai_title and has_markup(session.first_prompt):
            title = title_text(session.first_prompt)[:TITLE_LIMIT]
            if title and title != session.title:
                session.title = title
                changed.append("title")
        branches = []
        for branch in session.abandoned or []:
            prompt = branch.get("prompt") if isinstance(branch, dict) else None
            if isinstance(prompt, str) and has_markup(prompt):
                branch = {**branch, "prompt": title_text(prompt, 200)}
            branches.append(branch)
        if branches != (session.abandoned or []):
            session.abandoned = branches
            changed.append("abandoned")
        if changed:
            session.save(update_fields=changed)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0012_session_ai_title"),
    ]

    operations = [migrations.RunPython(retitle, migrations.RunPython.noop)]
