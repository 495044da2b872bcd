"""Bring back a branch an in-CLI rewind left: a new session whose active branch it is.

The corpus's forks tree (`-home-dev-code-forks/ff61fa45…`) has turns 1 and 2, then a
rewind: "one more prompt in the branch" was left for "a different prompt after
rewind" (turn 3). Its abandoned branch, brought back, is turns 1 and 2 and that prompt.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from sessions_app.models import AuditEntry, Session
from sessions_app.services.branching import BranchError, InvalidTurn, session_fork
from sessions_app.services.branching.inputs import fork_input
from sessions_app.services.importing import sessions_import

from .facts import FORKS_TREE
from .reading import analyse_file

pytestmark = pytest.mark.django_db
LEFT = "one more prompt in the branch"
REPLACED_BY = "a different prompt after rewind"


def tree(imported: Path) -> Session:
    return Session.objects.select_related("project").get(path=str(imported / FORKS_TREE))


def test_an_abandoned_branch_comes_back_as_the_active_branch_of_a_new_session(
    imported: Path,
) -> None:
    source = tree(imported)
    before = hashlib.sha256(Path(source.path).read_bytes()).hexdigest()
    (branch,) = source.abandoned
    active_prompts = list(
        source.records.active().turn_starts().order_by("line").values_list("text", flat=True)
    )
    new = session_fork(session=source, leaf=branch["leaf_uuid"])
    assert new.kind == Session.Kind.REVIVED and new.parent == source
    assert new.fork_turn == branch["at_turn"] - 1 == 2
    assert new.turn_count == 3 and new.abandoned == []
    prompts = list(
        new.records.active().turn_starts().order_by("line").values_list("text", flat=True)
    )
    assert prompts == [*active_prompts[:2], LEFT]
    # The file reads as intended on its own (a fresh analysis, as the CLI would resume).
    nodes, analysis = analyse_file(Path(new.path))
    assert analysis.turn_count == 3 and not analysis.abandoned
    assert nodes[analysis.prompt_lines[-1]].text == LEFT
    text = Path(new.path).read_text()
    assert REPLACED_BY not in text and LEFT in text
    records = [orjson.loads(line) for line in text.splitlines()]
    assert {r.get("sessionId") for r in records if "sessionId" in r} == {str(new.session_id)}
    # Its index is what an import of the file gives; the source is untouched.
    assert sessions_import(roots=[imported / "cli/claude"]).sessions == 0
    assert hashlib.sha256(Path(source.path).read_bytes()).hexdigest() == before


def test_a_leaf_that_ends_no_abandoned_branch_is_refused(imported: Path) -> None:
    source = tree(imported)
    active_leaf = source.leaf_uuid
    with pytest.raises(InvalidTurn, match="no abandoned branch"):
        session_fork(session=source, leaf=active_leaf)
    with pytest.raises(BranchError, match="leaf must be"):
        fork_input(leaf="../../etc")
    with pytest.raises(BranchError, match="a leaf or a turn"):
        fork_input(leaf="abc", turn=2)
    assert not Session.objects.filter(kind=Session.Kind.REVIVED).exists()


def test_the_page_command_and_api_bring_a_branch_back(
    imported: Path, client: Client, token: str
) -> None:
    source = tree(imported)
    leaf = source.abandoned[0]["leaf_uuid"]
    page = client.get(f"/sessions/{source.session_id}/", {"leaf": leaf}).content.decode()
    assert 'id="revive-branch"' in page
    response = client.post(f"/sessions/{source.session_id}/fork/", {"leaf": leaf})
    assert response.status_code == 302
    first = Session.objects.get(kind=Session.Kind.REVIVED)
    assert str(first.session_id) in response["Location"]
    assert AuditEntry.objects.filter(action="revived", result_session_id=first.session_id).exists()
    out = io.StringIO()
    call_command("fork_session", str(source.session_id), "--leaf", leaf, "--json", stdout=out)
    assert orjson.loads(out.getvalue())["kind"] == "revived"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    detail = client.get(f"/api/sessions/{source.session_id}", **auth).json()
    assert detail["abandoned"][0]["leaf_uuid"] == leaf
    made = client.post(
        f"/api/sessions/{source.session_id}/fork",
        data=orjson.dumps({"leaf": leaf}),
        content_type="application/json",
        **auth,
    )
    assert made.status_code == 201 and made.json()["turns"] == 3
    assert Session.objects.filter(kind=Session.Kind.REVIVED).count() == 3


def test_an_empty_leaf_is_refused_at_every_door(imported: Path, client: Client, token: str) -> None:
    source = tree(imported)
    sessions = Session.objects.count()
    words = "leaf must be the uuid of a record"
    with pytest.raises(BranchError, match=words):
        fork_input(leaf="")
    page = client.post(f"/sessions/{source.session_id}/fork/", {"leaf": ""}, HTTP_HX_REQUEST="true")
    assert page.status_code == 400 and words in page.content.decode()
    api = client.post(
        f"/api/sessions/{source.session_id}/fork",
        data=orjson.dumps({"leaf": ""}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert api.status_code == 400 and words in api.json()["error"]
    with pytest.raises(CommandError, match=words):
        call_command("fork_session", str(source.session_id), "--leaf", "")
    assert Session.objects.count() == sessions
    # Without the field at all, the Branch button still branches the whole session.
    assert client.post(f"/sessions/{source.session_id}/fork/").status_code == 302
