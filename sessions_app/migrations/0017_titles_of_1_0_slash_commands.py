"""Titles of sessions that start with a Claude Code 1.0.x slash command (`/init`), and
abandoned branches' prompts, without the command's expansion (`<command-contents>` JSON)
that imports before took for the title: the rule imports now follow."""

from django.db import migrations

from sessions_app.formats.markup import title_text

TITLE_LIMIT = 300
CONTENTS = "<command-contents>"


def retitle(apps, schema_editor):
    Session = apps.get_model("sessions_app", "Session")
    found = Session.objects.filter(first_prompt__contains=CONTENTS) | Session.objects.filter(
        abandoned__icontains=CONTENTS
    )
    for session in found.iterator(chunk_size=500):
        changed = []
        if not session.custom_title and not session.ai_title and CONTENTS in session.first_prompt:
            title = title_text(session.first_prompt)[:TITLE_LIMIT]
            if title and title != session.title:
                session.title = title
                changed.append("title")
        branches = []
        for branch in session.abandoned or []:
            prompt = branch.get("prompt") if isinstance(branch, dict) else None
            if isinstance(prompt, str) and CONTENTS in prompt:
                # Stored already cut to 200 characters: the command is what came before
                # (its name then written without the slash 1.0.x left out).
                command = prompt[: prompt.index(CONTENTS)].strip()
                if command and not command.startswith("/"):
                    command = "/" + command
                branch = {**branch, "prompt": command}
            branches.append(branch)
        if branches != (session.abandoned or []):
            session.abandoned = branches
            changed.append("abandoned")
        if changed:
            session.save(update_fields=changed)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0016_import_status"),
    ]

    operations = [migrations.RunPython(retitle, migrations.RunPython.noop)]
