"""What an action made is said where its redirect lands, with a link back to its source;
an edit & fork hands its prompt to the run box ("Carry on")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

from .factories import jsonl, make_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(tmp_path: Path, settings) -> Session:
    """A 3-turn Claude session whose folder (`cwd`) is on this machine, so it can be run."""
    root = tmp_path / "root"
    path, records = make_session(root, 3)
    for record in records:
        record["cwd"] = str(tmp_path)
    path.write_bytes(jsonl(records))
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    settings.RUN_COMMANDS = {"claude": "true"}  # a CLI on PATH: the run box is offered
    sessions_import(roots=[root])
    return Session.objects.get(session_id=records[0]["sessionId"])


def landing_note(html: str) -> str:
    match = re.search(r'<div class="messages landing" id="landing"[^>]*>(.*?)</div>', html, re.S)
    assert match, "no note in the run box"
    return match.group(1)


def fork(client: Client, session: Session, **form: str) -> tuple[Session, str, str]:
    """Post the page's fork form as htmx does; the new session, its URL and its page."""
    response = client.post(f"/sessions/{session.session_id}/fork/", form, HTTP_HX_REQUEST="true")
    assert response.status_code == 200, response.content
    url = response["HX-Redirect"]
    new = Session.objects.exclude(pk=session.pk).get(parent=session)
    return new, url, client.get(url).content.decode()


@pytest.mark.parametrize(
    ("form", "words"),
    [
        ({}, "a branch with all 3 turns"),
        ({"turn": "2"}, "branched from turn 2, with turns 1–2"),
        ({"turn": "3", "mode": "before"}, "an edit &amp; fork before turn 3, with turns 1–2"),
    ],
)
def test_a_branch_says_what_it_is_where_it_lands_with_a_link_to_its_source(
    client: Client, session: Session, form: dict[str, str], words: str
) -> None:
    new, url, page = fork(client, session, **form)
    assert url.endswith("#run")  # the redirect lands on the run box...
    note = landing_note(page)  # ...and the note is there, not only at the top
    assert f"Created “{new.title}” ({new.session_id})" in note
    assert words in note
    assert f'<a href="/sessions/{session.session_id}/" class="source-link">' in note
    assert f"claude --resume {new.session_id}" in note
    assert page.count(f"({new.session_id})") == 1  # said once, not again in the top banner


def test_a_rewind_links_to_the_backup_that_keeps_the_old_history(
    client: Client, session: Session
) -> None:
    response = client.post(f"/sessions/{session.session_id}/rewind/", {"turn": "2"}, follow=True)
    page = response.content.decode()
    session.refresh_from_db()
    backup = session.rewind_undo["backup_id"]
    assert "Rewound to turn 2: 1 turn now." in page
    assert f'<a href="/sessions/{backup}/" class="source-link">{backup}</a>' in page


def run_box(html: str) -> str:
    match = re.search(r'<textarea id="run-prompt"[^>]*>(.*?)</textarea>', html, re.S)
    assert match, "no run box"
    return match.group(1)


def test_edit_and_fork_hands_its_prompt_to_the_run_box(client: Client, session: Session) -> None:
    new, url, page = fork(client, session, turn="3", mode="before")
    assert new.turn_count == 2
    assert run_box(page) == "prompt 3"  # to change and Send, nothing to copy down by hand
    assert 'id="edit-prompt"' not in page  # one box, not two that drift apart
    assert 'href="#run-prompt" id="edit-in-run-box"' in page
    assert 'data-copy-from="run-prompt"' in page  # for the CLI, copied from that box
    assert run_box(client.get(url).content.decode()) == "prompt 3"  # and again on reload
    # A plain branch's run box starts empty: it has no prompt waiting.
    Session.objects.filter(pk=new.pk).delete()
    _, _, page = fork(client, session, turn="2")
    assert run_box(page) == ""


def test_without_a_run_box_the_edit_box_stays(client: Client, session: Session) -> None:
    new, _, _ = fork(client, session, turn="3", mode="before")
    Session.objects.filter(pk=new.pk).update(cwd="/nowhere/at/all")  # not on this machine
    page = client.get(f"/sessions/{new.session_id}/").content.decode()
    assert re.search(r'<textarea id="edit-prompt"[^>]*>prompt 3</textarea>', page)
    assert 'id="run-form"' not in page
