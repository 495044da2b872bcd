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
