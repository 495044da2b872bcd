"""Qwen Code's older folder, `~/.qwen/tmp/<project hash>/chats/`, imported like the current one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.test import override_settings

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURE = Path(__file__).parent / "fixtures/cli/qwen/-home-dev-code-qwenproj/chats"
SESSION = "6fbeb39a-1e79-43ef-995c-46eedd93e6fe"
HASH = "2f5e0c0c4b4b8e6b2c5f9a1d3e7b6a4c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a"


def _legacy_home(home: Path) -> Path:
    """A `~/.qwen` whose only session lies in the older `tmp/<hash>/chats/` folder."""
    tmp = home / ".qwen" / "tmp"
    chats = tmp / HASH / "chats"
    chats.mkdir(parents=True)
    shutil.copy(FIXTURE / f"{SESSION}.jsonl", chats)
    # What else the CLI keeps there: not sessions, and never read as any agent's.
    (tmp / HASH / "shell_history").write_text("ls\n")
    (tmp / "session-writer-locks").mkdir()
    (tmp / "other").mkdir()
    (tmp / "other" / f"{SESSION.replace('6', '7')}.jsonl").write_text("{}\n")
    return tmp


def test_a_session_in_the_legacy_folder_is_imported_as_qwen_with_its_turns(tmp_path: Path) -> None:
    root = _legacy_home(tmp_path)

    report = sessions_import(roots=[root])

    assert report.errors == []
    session = Session.objects.get()
    assert session.session_id.hex == SESSION.replace("-", "")
    assert session.agent == "qwen" and session.project.agent == "qwen"
    assert session.turn_count == 3  # the corpus README's count for this file
    assert session.project.folder == str(root / HASH)
    assert session.project.path == "/home/dev/code/qwenproj"  # from the records' cwd


def test_the_legacy_folder_is_a_default_root_beside_projects(tmp_path: Path) -> None:
    from django.core.management import call_command

    from branchboard import settings as project_settings

    defaults = [str(p) for p in project_settings.SESSION_ROOTS]
    home = str(Path.home())
    if "BRANCHBOARD_ROOTS" not in os.environ:
        assert f"{home}/.qwen/tmp" in defaults and f"{home}/.qwen/projects" in defaults
        assert f"{home}/.claude/projects" in defaults
    root = _legacy_home(tmp_path)
    with override_settings(SESSION_ROOTS=[root]):
        call_command("import_sessions", "--no-progress")
    assert Session.objects.filter(agent="qwen").count() == 1


def test_the_page_of_a_legacy_session_says_where_todays_cli_resumes(client, tmp_path: Path) -> None:
    root = _legacy_home(tmp_path)
    sessions_import(roots=[root])

    page = client.get(f"/sessions/{SESSION}/").content.decode()

    assert f"qwen --resume {SESSION}" in page
    assert 'id="legacy-folder"' in page and "older Qwen Code releases" in page
