"""Restore writes only under today's roots, and no folder swapped for a link leads it out."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from pathlib import Path

import orjson
import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import Session
from sessions_app.services.archive.restoring import RestoreRefused, session_restore
from sessions_app.services.importing import sessions_import

from .corpus import ALL_ROOTS

pytestmark = pytest.mark.django_db

CLAUDE = "cli/claude"
FOLDER = "-home-dev-code-webapp"
WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
WEBAPP = f"{CLAUDE}/{FOLDER}/{WEBAPP_ID}.jsonl"


@pytest.fixture
def removed(imported: Path, settings) -> Session:
    """The webapp session's file deleted, imported again, its root configured."""
    settings.SESSION_ROOTS = [imported / r for r in ALL_ROOTS]
    (imported / WEBAPP).unlink()
    report = sessions_import(roots=[imported / r for r in ALL_ROOTS])
    assert report.removed == 1, report
    return Session.objects.get(session_id=WEBAPP_ID)


def test_a_folder_swapped_for_a_link_never_leads_a_restore_outside_the_root(
    imported: Path, removed: Session, tmp_path: Path
) -> None:
    folder = imported / CLAUDE / FOLDER
    shutil.rmtree(folder)  # the restore makes the folder; the swapper races it
    outside = tmp_path / "outside"
    outside.mkdir()
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for step in (
                lambda: os.symlink(outside, folder),
                lambda: os.unlink(folder),
                lambda: os.mkdir(folder),
                lambda: os.unlink(folder / f"{WEBAPP_ID}.jsonl"),
                lambda: os.rmdir(folder),
            ):
                with contextlib.suppress(OSError):
                    step()

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    unexpected: list[BaseException] = []
    restored = refused = 0
    deadline = time.monotonic() + 4
    try:
        while time.monotonic() < deadline and not any(outside.iterdir()):
            try:
                session_restore(session=removed)
                restored += 1
            except RestoreRefused:
                refused += 1
            except Exception as exc:
                unexpected.append(exc)
    finally:
        stop.set()
        swapper.join(timeout=10)
    assert not swapper.is_alive()
    assert list(outside.iterdir()) == [], f"written outside the root ({restored} restores)"
    assert unexpected == []
    assert restored + refused > 0


def test_a_link_in_place_of_the_folder_is_a_clear_refusal_on_the_page_api_and_command(
    client, imported: Path, removed: Session, token: str, tmp_path: Path
) -> None:
    folder = imported / CLAUDE / FOLDER
    shutil.rmtree(folder)
    outside = tmp_path / "outside"
    outside.mkdir()
    folder.symlink_to(outside)
    response = client.post(
        f"/api/sessions/{WEBAPP_ID}/restore", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 409, response.content
    assert "link" in orjson.loads(response.content)["error"]
    page = client.post(f"/sessions/{WEBAPP_ID}/restore/")
    assert page.status_code in {302, 409}
    with pytest.raises(CommandError, match="link"):
        call_command("restore_session", WEBAPP_ID)
    assert list(outside.iterdir()) == []


def test_a_restore_into_a_root_no_longer_configured_is_refused_naming_the_roots(
    client, imported: Path, removed: Session, token: str, settings, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "only-root"
    elsewhere.mkdir()
    settings.SESSION_ROOTS = [elsewhere]
    with pytest.raises(RestoreRefused, match="not a configured session root") as caught:
        session_restore(session=removed)
    assert str(elsewhere.resolve()) in str(caught.value)
    response = client.post(
        f"/api/sessions/{WEBAPP_ID}/restore", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 409
    assert str(elsewhere.resolve()) in orjson.loads(response.content)["error"]
    with pytest.raises(CommandError, match="BRANCHBOARD_ROOTS"):
        call_command("restore_session", WEBAPP_ID)
    assert not (imported / WEBAPP).exists()
