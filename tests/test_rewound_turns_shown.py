"""A Qwen or Gemini rewind from the page leaves the old turns in the file (the CLIs' own
way): the transcript shows them as an abandoned branch, as it does Claude's, right away.

They split off after the session's last turn, which no turn of the page is (a Claude
branch left inside the CLI hangs at the new prompt that replaced it): shown after it.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"
QWEN = "6fbeb39a-1e79-43ef-995c-46eedd93e6fe"
QWEN_FILE = f"cli/qwen/-home-dev-code-qwenproj/chats/{QWEN}.jsonl"
GEMINI = "ff1739a3-6bda-4ad8-a470-9f052a640e1e"


def _idle(root: Path) -> None:
    old = time.time() - 60
    for path in root.rglob("*.json*"):
        os.utime(path, (old, old))


@pytest.fixture
def qwen(tmp_path: Path, settings) -> Session:
    root = tmp_path / "qwen"
    shutil.copytree(FIXTURES / "cli" / "qwen", root)
    _idle(root)
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    sessions_import(roots=[root])
    return Session.objects.get(session_id=QWEN)


@pytest.fixture
def gemini(tmp_path: Path, settings) -> Session:
    root = tmp_path / ".gemini" / "tmp"
    shutil.copytree(FIXTURES / "gemini_resumed" / "tmp", root)
    _idle(root)
    stub = next(root.glob("*/chats/session-2026-11-28T21-43-ff1739a3.jsonl"))
    os.utime(stub, (time.time() - 120, time.time() - 120))  # the CLI went on in the other
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    sessions_import(roots=[root])
    return Session.objects.get(session_id=GEMINI)


def prompts(session: Session) -> list[str]:
    return list(session.records.turn_starts().order_by("line").values_list("text", flat=True))


@pytest.mark.parametrize("agent", ["qwen", "gemini"])
def test_the_turns_a_page_rewind_left_are_shown_as_an_abandoned_branch(
    client: Client, request: pytest.FixtureRequest, agent: str
) -> None:
    session: Session = request.getfixturevalue(agent)
    old = prompts(session)
    assert len(old) == 3
    response = client.post(f"/sessions/{session.session_id}/rewind/", {"turn": "2"}, follow=True)
    page = response.content.decode()
    session.refresh_from_db()
    assert session.turn_count == 1
    assert 'id="undo-rewind"' in page
    # The transcript shows the two turns the rewind left, with a link to read them...
    after = re.search(r'<div class="abandoned abandoned-after">(.*?)</div>', page, re.S)
    assert after, "the abandoned turns are shown nowhere"
    assert "2 turns abandoned after turn 1" in after.group(1)
    assert old[1][:40] in after.group(1)
    link = re.search(r'href="(/sessions/[^"]+\?leaf=[^"]+)"', after.group(1))
    assert link
    # ...the rewind's note says where they are...
    assert "kept in the file as an abandoned branch" in page
    assert link.group(1).replace("&", "&amp;") in page.split('id="messages"')[1].split("</div>")[0]
    # ...and the link opens them: turns 2 and 3 as they were.
    branch = client.get(link.group(1).replace("&amp;", "&")).content.decode()
    for prompt in old[1:]:
        assert prompt[:40] in branch


def test_a_rewind_to_the_last_turn_shows_that_turn_after_the_one_before(
    client: Client, qwen: Session
) -> None:
    client.post(f"/sessions/{qwen.session_id}/rewind/", {"turn": "3"})
    page = client.get(f"/sessions/{qwen.session_id}/").content.decode()
    assert page.count('class="abandoned abandoned-after"') == 1
    assert "1 turn abandoned after turn 2" in page
