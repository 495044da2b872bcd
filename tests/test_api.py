"""The JSON API: tokens, every status code, and parity with the command."""

from __future__ import annotations

import io
import os
import uuid
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.urls import get_resolver

from sessions_app.api.schema import OPENAPI
from sessions_app.models import AuditEntry, Session
from sessions_app.services import branching

pytestmark = pytest.mark.django_db

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def api(
    client, method: str, url: str, token: str | None, body: object = None, raw: bytes | None = None
):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = raw if raw is not None else (orjson.dumps(body) if body is not None else b"")
    call = getattr(client, method)
    return (
        call(url, data=data, content_type="application/json", **headers)
        if method == "post"
        else call(url, **headers)
    )


def listing(corpus: Path) -> list[str]:
    return sorted(str(p) for p in corpus.rglob("*.jsonl"))


def test_missing_or_wrong_token_is_401_and_writes_nothing(client, imported: Path) -> None:
    before = listing(imported)
    for token in (None, "bb_wrong"):
        response = api(client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, {})
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert api(client, "get", f"/api/sessions/{WEBAPP_ID}", token).status_code == 401
    assert listing(imported) == before


def test_get_session_lists_turns_and_lineage(client, imported: Path, token: str) -> None:
    response = api(client, "get", f"/api/sessions/{WEBAPP_ID}", token)
    assert response.status_code == 200
    data = response.json()
    assert data["turns"] == 3 and len(data["turn_list"]) == 3
    assert [t["turn"] for t in data["turn_list"]] == [1, 2, 3]
    assert data["turn_list"][0]["prompt"]
    assert data["resume_command"] == f"cd /home/dev/code/webapp && claude --resume {WEBAPP_ID}"
    assert data["children"] == [] and data["parent_id"] is None


def test_fork_branch_and_edit_fork(client, imported: Path, token: str) -> None:
    url = f"/api/sessions/{WEBAPP_ID}/fork"
    branch = api(client, "post", url, token, {})
    assert branch.status_code == 201 and branch.json()["kind"] == "branch"
    fork = api(client, "post", url, token, {"turn": 2, "title": "my try"}).json()
    assert (fork["kind"], fork["turn"], fork["turns"], fork["title"]) == ("fork", 2, 2, "my try")
    before = api(client, "post", url, token, {"turn": 3, "include_turn": False}).json()
    assert before["kind"] == "fork_before" and before["turns"] == 2 and before["prompt"]
    parent = api(client, "get", f"/api/sessions/{WEBAPP_ID}", token).json()
    assert {c["session_id"] for c in parent["children"]} == {
        branch.json()["session_id"],
        fork["session_id"],
        before["session_id"],
    }
    assert AuditEntry.objects.filter(via="api").count() == 3


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"turn": 0}, 400, "out of range"),
        ({"turn": 99}, 400, "out of range"),
        ({"turn": "two"}, 400, "turn must be a whole number, not 'two'"),
        ({"turn": 1.5}, 400, "turn must be a whole number, not 1.5"),
        ({"include_turn": False}, 400, "edit & fork needs a turn"),
        ({"turn": None, "include_turn": False}, 400, "edit & fork needs a turn"),
        ({"include_turn": "yes"}, 400, "true or false"),
        ({"title": 5}, 400, "title"),
        ([1, 2], 400, "JSON object"),
    ],
)
def test_bad_fork_requests_are_400(
    client, imported: Path, token: str, body, status: int, message: str
) -> None:
    before = listing(imported)
    response = api(client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, body)
    assert response.status_code == status and message in response.json()["error"]
    assert listing(imported) == before


def test_malformed_body_is_400(client, imported: Path, token: str) -> None:
    response = api(client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, raw=b"{nope")
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]


def test_unknown_session_is_404(client, imported: Path, token: str) -> None:
    unknown = uuid.uuid4()
    for method, url in [
        ("get", f"/api/sessions/{unknown}"),
        ("post", f"/api/sessions/{unknown}/fork"),
        ("post", f"/api/sessions/{unknown}/rewind"),
        ("post", f"/api/sessions/{unknown}/rewind/undo"),
    ]:
        response = api(client, method, url, token, {"turn": 2})
        assert response.status_code == 404, url
        assert "no session" in response.json()["error"]
    assert (
        client.get("/api/sessions/not-a-uuid", HTTP_AUTHORIZATION=f"Bearer {token}").status_code
        == 404
    )


def test_changed_source_is_409(client, imported: Path, token: str) -> None:
    with (imported / WEBAPP).open("ab") as f:
        f.write(b"\n")
    response = api(client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, {"turn": 1})
    assert response.status_code == 409 and "changed on disk" in response.json()["error"]


def test_busy_session_rewind_is_409(client, imported: Path, token: str) -> None:
    path = imported / WEBAPP
    os.utime(path)
    Session.objects.filter(path=str(path)).update(file_mtime_ns=path.stat().st_mtime_ns)
    response = api(client, "post", f"/api/sessions/{WEBAPP_ID}/rewind", token, {"turn": 2})
    assert response.status_code == 409 and "still be running" in response.json()["error"]


def test_existing_target_is_409(client, imported: Path, token: str, monkeypatch) -> None:
    taken = uuid.uuid4()
    target = (imported / WEBAPP).with_name(f"{taken}.jsonl")
    target.write_bytes(b"mine\n")
    monkeypatch.setattr(branching.uuid, "uuid4", lambda: taken)
    response = api(client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, {})
    assert response.status_code == 409 and "already exists" in response.json()["error"]
    assert target.read_bytes() == b"mine\n"


def test_rewind_and_undo(client, imported: Path, token: str) -> None:
    original = (imported / WEBAPP).read_bytes()
    response = api(client, "post", f"/api/sessions/{WEBAPP_ID}/rewind", token, {"turn": 2})
    assert response.status_code == 200
    data = response.json()
    assert data["turns"] == 1 and data["backup_id"] and data["rewind_undo_available"]
    undo = api(client, "post", f"/api/sessions/{WEBAPP_ID}/rewind/undo", token)
    assert undo.status_code == 200 and undo.json()["turns"] == 3
    assert (imported / WEBAPP).read_bytes() == original
    again = api(client, "post", f"/api/sessions/{WEBAPP_ID}/rewind/undo", token)
    assert again.status_code == 409 and "no rewind to undo" in again.json()["error"]
    missing = api(client, "post", f"/api/sessions/{WEBAPP_ID}/rewind", token, {})
    assert missing.status_code == 400


def test_wrong_methods_are_405(client, imported: Path, token: str) -> None:
    assert api(client, "get", f"/api/sessions/{WEBAPP_ID}/fork", token).status_code == 405
    assert api(client, "post", f"/api/sessions/{WEBAPP_ID}", token, {}).status_code == 405
    assert client.put(f"/api/sessions/{WEBAPP_ID}/rewind").status_code == 405
    assert client.post("/api/openapi.json").status_code == 405


def _normalised(path: Path, new_id: str) -> list[bytes]:
    lines = path.read_bytes().replace(new_id.encode(), b"NEW").splitlines()
    return [line for line in lines if b'"custom-title"' not in line]


def test_api_fork_equals_command_fork(client, imported: Path, token: str) -> None:
    via_api = api(client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, {"turn": 2}).json()
    out = io.StringIO()
    call_command("fork_session", WEBAPP_ID, "--turn", "2", "--json", stdout=out)
    via_command = orjson.loads(out.getvalue())
    a = _normalised(Path(via_api["path"]), via_api["session_id"])
    b = _normalised(Path(via_command["path"]), via_command["session_id"])
    assert a == b and len(a) > 10


def test_an_unknown_api_path_is_a_json_404(client) -> None:
    for path in ("/api/sessions/not-a-uuid", "/api/nothing/here", "/api/sessions/"):
        response = client.get(path)
        assert response.status_code == 404
        assert "no API endpoint" in response.json()["error"]


def test_openapi_describes_every_api_route_and_response(client, imported: Path, token: str) -> None:
    spec = client.get("/api/openapi.json").json()
    assert spec == orjson.loads(orjson.dumps(OPENAPI))
    resolver = get_resolver()
    routes = set()
    for pattern in resolver.url_patterns:
        if str(pattern.pattern) == "api/":
            for sub in pattern.url_patterns:
                if sub.name == "not_found":  # the JSON 404 for every other path
                    continue
                route = "/api/" + str(sub.pattern).replace("<sref:session_id>", "{session_id}")
                if not route.endswith(".json"):
                    routes.add(route)
    assert routes == set(spec["paths"])
    required = set(spec["components"]["schemas"]["Session"]["required"])
    got = api(client, "get", f"/api/sessions/{WEBAPP_ID}", token).json()
    assert required <= set(got)
    assert set(got) <= set(spec["components"]["schemas"]["Session"]["properties"])
    made = api(client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, {"turn": 1}).json()
    assert required <= set(made) <= set(spec["components"]["schemas"]["Session"]["properties"])
    fork_responses = spec["paths"]["/api/sessions/{session_id}/fork"]["post"]["responses"]
    assert "201" in fork_responses
    fresh = api(
        client, "post", f"/api/sessions/{WEBAPP_ID}/fork", token, {"turn": 1, "include_turn": False}
    )
    assert fresh.status_code == 200
    assert "FreshStart" in fork_responses["200"]["content"]["application/json"]["schema"]["$ref"]
    schema = spec["components"]["schemas"]["FreshStart"]
    assert set(schema["required"]) == set(fresh.json()) == set(schema["properties"])
    assert fresh.json()["session_id"] is None and fresh.json()["turn"] == 1
