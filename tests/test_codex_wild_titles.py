"""Sessions started from Codex's IDE extension are titled by what was typed (issue 42, item 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

WILD = Path(__file__).parent / "fixtures/codex_wild/sessions"
IDE = "019a0000-cccc-7ccc-8ccc-00000000000c"


def test_an_ide_session_is_titled_by_the_request_not_the_ide_context(
    tmp_path: Path, settings
) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(WILD, root)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])

    session = Session.objects.get(session_id=IDE)
    assert session.title == "fix the failing import"
    # The prompt itself is what Codex sends again, the IDE context included.
    assert session.first_prompt.startswith("# Context from my IDE setup:")
    assert session.turn_count == 1


DESKTOP = "019a0000-dddd-7ddd-8ddd-00000000000d"


def test_only_messages_a_user_message_event_confirms_are_prompts(tmp_path: Path, settings) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(WILD, root)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])

    session = Session.objects.get(session_id=DESKTOP)
    # `<recommended_plugins>` and a tag no prefix list names are context, not turns.
    assert session.turn_count == 2
    assert session.title == "first real prompt"
    texts = list(session.records.turn_starts().order_by("line").values_list("text", flat=True))
    assert texts[0] == "first real prompt"
    assert texts[1].startswith("what is in this picture?")  # the image's item, confirmed
    assert not session.records.filter(text__contains="recommended_plugins", starts_turn=True)
