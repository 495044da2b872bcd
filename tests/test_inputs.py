"""One input path: pages, htmx actions, the JSON API and the commands accept and refuse alike."""

from __future__ import annotations

import getpass
import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import AuditEntry, Session
from sessions_app.services.branching import BranchError
from sessions_app.services.branching.inputs import fork_input, rewind_input

pytestmark = pytest.mark.django_db

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def via_page(client, path: str, data: dict) -> str:
    response = client.post(path, data, HTTP_HX_REQUEST="true")
    assert response.status_code >= 400
    return response.content.decode()


def via_api(client, path: str, token: str, body: dict) -> str:
    response = client.post(
        path,
        orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code >= 400
    return response.json()["error"]


def via_command(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        call_command(*args, stdout=io.StringIO())
    return str(caught.value)


@pytest.mark.parametrize(
    ("form", "json", "options", "words"),
    [
        (
            {"turn": "abc"},
            {"turn": "abc"},
            ["--turn", "abc"],
            "turn must be a whole number, not 'abc'",
        ),
        ({"turn": "99"}, {"turn": 99}, ["--turn", "99"], "turn 99 is out of range"),
        ({"mode": "before"}, {"include_turn": False}, ["--before"], "edit & fork needs a turn"),
        ({"turn": "0"}, {"turn": 0}, ["--turn", "0"], "turn 0 is out of range"),
    ],
)
def test_fork_inputs_are_refused_in_the_same_words_everywhere(
    client, imported: Path, token: str, form: dict, json: dict, options: list, words: str
) -> None:
    from django.utils.html import escape

    sessions = Session.objects.count()
    page = via_page(client, f"/sessions/{WEBAPP_ID}/fork/", form)
    api = via_api(client, f"/api/sessions/{WEBAPP_ID}/fork", token, json)
    command = via_command("fork_session", WEBAPP_ID, *options)
    assert escape(words) in page
    assert words in api
    assert words in command
    assert Session.objects.count() == sessions  # nothing made


def test_rewind_inputs_are_refused_in_the_same_words_everywhere(
    client, imported: Path, token: str
) -> None:
    from django.utils.html import escape

    for form, json, options, words in [
        ({"turn": "x1"}, {"turn": "x1"}, ["--turn", "x1"], "turn must be a whole number, not 'x1'"),
        ({}, {}, None, "rewind needs a turn"),
        ({"turn": "1"}, {"turn": 1}, ["--turn", "1"], "this needs turn 2 or later"),
    ]:
        assert escape(words) in via_page(client, f"/sessions/{WEBAPP_ID}/rewind/", form)
        assert words in via_api(client, f"/api/sessions/{WEBAPP_ID}/rewind", token, json)
        if options is not None:
            assert words in via_command("rewind_session", WEBAPP_ID, *options)


def test_the_value_object_on_its_own() -> None:
    assert fork_input(turn="3").turn == 3
    assert fork_input(turn=3, include_turn=False).fresh_start is False
    assert fork_input(turn=1, include_turn=False).fresh_start is True
    assert fork_input(title="  a\x00b  ").title == "a b"
    assert fork_input().turn is None
    assert rewind_input(turn=" 2 ") == 2
    for bad in [{"turn": True}, {"turn": 1.5}, {"turn": "1e3"}, {"include_turn": "yes"}]:
        with pytest.raises(BranchError):
            fork_input(**bad)
    with pytest.raises(BranchError, match="at most 300"):
        fork_input(title="x" * 301)


def test_commands_are_audited_as_the_os_user(imported: Path) -> None:
    out = io.StringIO()
    call_command("fork_session", WEBAPP_ID, "--turn", "1", "--json", stdout=out)
    call_command("rewind_session", WEBAPP_ID, "--turn", "2", stdout=io.StringIO())
    entries = list(AuditEntry.objects.order_by("at").values_list("via", "actor", "action", "turn"))
    user = f"os:{getpass.getuser()}"
    assert entries == [("command", user, "fork", 1), ("command", user, "rewind", 2)]
