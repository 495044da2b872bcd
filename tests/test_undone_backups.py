"""A rewind's backup after the rewind was undone: the same history as its session again.

While the rewind holds, the backup is the only place the old turns live: a direction
of its own, listed. Once undone, the session holds that history again, so the
lists leave the backup out (a link shows it) and the lineage says it was undone;
its file stays.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.branching import session_rewind, session_rewind_undo

pytestmark = pytest.mark.django_db

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_an_undone_rewind_s_backup_leaves_the_lists_and_is_marked(client, imported: Path) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    rewound = session_rewind(session=source, turn=2)
    backup = Session.objects.get(session_id=rewound.rewind_undo["backup_id"])
    project = f"/projects/{source.project_id}/"
    assert str(backup.session_id) in page(client, f"{project}?sort=updated")
    assert str(backup.session_id) in page(client, "/recent/?sort=updated")

    session_rewind_undo(session=rewound)
    listed = page(client, f"{project}?sort=updated")
    assert str(backup.session_id) not in listed
    assert "1 backup of an undone rewind is hidden" in listed
    shown = page(client, f"{project}?sort=updated&undone=1")
    assert str(backup.session_id) in shown and "rewind undone" in shown
    assert str(backup.session_id) not in page(client, "/recent/?sort=updated")
    assert str(backup.session_id) not in page(client, "/")
    lineage = page(client, f"/sessions/{source.session_id}/lineage/")
    assert str(backup.session_id) in lineage and "rewind undone" in lineage
    backup_page = page(client, f"/sessions/{backup.session_id}/")
    assert "rewind undone" in backup_page
    assert Path(backup.path).exists()  # the user's file stays


def test_a_backup_whose_rewind_holds_is_a_direction_of_its_own(client, imported: Path) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    rewound = session_rewind(session=source, turn=2)
    backup = Session.objects.get(session_id=rewound.rewind_undo["backup_id"])
    listed = page(client, f"/projects/{source.project_id}/?sort=updated")
    assert str(backup.session_id) in listed and "undone rewind" not in listed
    assert "rewind undone" not in page(client, f"/sessions/{source.session_id}/lineage/")
