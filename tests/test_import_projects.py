"""The import meets each project folder once per run, and a rolled-back file leaves no trace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.models import Project, Session
from sessions_app.services.importing import sessions_import

from .factories import one_turn, write_session

pytestmark = pytest.mark.django_db(transaction=True)

FIRST = "00000000-0000-4000-8000-000000000001"
SECOND = "ffffffff-0000-4000-8000-000000000002"


def test_a_project_made_by_a_file_that_failed_is_made_again_for_the_next(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    original = write_session(root / "-work-a", one_turn(FIRST, "first", "one"))
    assert sessions_import(roots=[root]).errors == []
    # A new project folder whose first file (by name) repeats an imported session id:
    # its transaction, which made the project row, is rolled back.
    (root / "-work-b").mkdir()
    shutil.copy(original, root / "-work-b" / original.name)
    write_session(root / "-work-b", one_turn(SECOND, "second", "two"))

    report = sessions_import(roots=[root])

    # Left out before it is opened (tests/test_import_skips.py); the file after it still
    # makes its project.
    assert report.errors == []
    assert len(report.left_out) == 1 and "session id already imported" in report.left_out[0]
    second = Session.objects.get(session_id=SECOND.replace("-", ""))
    assert second.project.folder == str(root / "-work-b")
    assert Project.objects.get(folder=str(root / "-work-b")).session_count == 1
    assert Project.objects.get(folder=str(root / "-work-a")).session_count == 1
