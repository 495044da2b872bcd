"""Many small new files pushed to a team hub in one request (`/api/hub/batch`): each is
checked as a chunk and commit of a whole file is and stored or refused on its own (a
refused one writes nothing of itself), and the stored ones are indexed in one pass.

The hostile batches go to this process through Django's test client, as in
test_hub_hostile; the push of a machine goes to a live server, as in test_hub.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.http import HttpResponse
from django.test import Client

from sessions_app.models import ApiToken, AuditEntry, HubFile, Session
from sessions_app.services.hub.client import Hub as HubClient
from sessions_app.services.hub.client import Login
from sessions_app.services.hub.namespaces import hub_folder
from sessions_app.services.hub.pushing import push

from .corpus import FIXTURES, make_idle
from .test_hub_hostile import Hub, _stored, _user

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.django_db

CLAUDE = FIXTURES / "cli" / "claude"
SOURCES = sorted(p for p in CLAUDE.rglob("*.jsonl") if "subagents" not in p.parts)
BY_SIZE = sorted(SOURCES, key=lambda p: p.stat().st_size)


@pytest.fixture
def hub(tmp_path: Path, settings) -> Hub:
    """The hub is this process; alice and bob may push, carol may not (test_hub_hostile)."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    tokens = []
    for name, perms in (
        ("alice", ("push_sessions",)),
        ("bob", ("push_sessions",)),
        ("carol", ("write_sessions",)),
    ):
        _, key = ApiToken.issue(name="laptop", user=_user(name, *perms))
        tokens.append(key)
    return Hub(Client(), *tokens)


def _hub_path(source: Path) -> str:
    return f".claude/projects/{source.relative_to(CLAUDE).as_posix()}"


def _body(files: list[tuple[str, bytes]], *, lie: dict[str, Any] | None = None) -> bytes:
    """A batch body: the manifest line, then the bytes; `lie` overrides manifest fields
    of the first file."""
    listed = [
        {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for path, data in files
    ]
    listed[0].update(lie or {})
    manifest = orjson.dumps({"files": listed}) + b"\n"
    return zstd.compress(manifest + b"".join(data for _, data in files))


def _batch(hub: Hub, body: bytes, *, token: str | None = None) -> HttpResponse:
    return hub.client.post(
        "/api/hub/batch?namespace=alice@laptop",
        body,
        content_type="application/zstd",
        HTTP_AUTHORIZATION=f"Bearer {token or hub.alice}",
    )


def _on_hub(path: str) -> Path:
    return hub_folder() / "alice@laptop" / path


def test_a_batch_stores_every_file_whole_and_indexes_them(hub: Hub) -> None:
    files = [(_hub_path(s), s.read_bytes()) for s in SOURCES]
    response = _batch(hub, _body(files))
    assert response.status_code == 200, response.content
    answer = response.json()["files"]
    assert _stored() == {f"alice@laptop/{path}": data for path, data in files}
    for (path, data), source in zip(files, SOURCES, strict=True):
        session = Session.objects.get(namespace="alice@laptop", session_id=source.stem)
        assert answer[path] == {"size": len(data), "session_id": str(session.session_id)}
        assert session.path == str(_on_hub(path))
        assert session.line_count == len(data.splitlines())
        assert session.search_lines == session.line_count  # its search words: indexed too
        assert HubFile.objects.get(path=path).size == len(data)
    assert AuditEntry.objects.filter(action="push").count() == len(files)


def test_a_refused_file_in_a_batch_writes_nothing_of_it_and_the_others_are_said_one_by_one(
    hub: Hub, settings
) -> None:
    good, liar, big = BY_SIZE[0], BY_SIZE[1], BY_SIZE[-1]
    settings.HUB_MAX_FILE = max(len(good.read_bytes()), len(liar.read_bytes()))
    assert len(big.read_bytes()) > settings.HUB_MAX_FILE
    liar_bytes = liar.read_bytes()
    outside = ".claude/projects/../../.ssh/authorized_keys.jsonl"
    files = [
        (_hub_path(liar), liar_bytes[:-1] + b"X"),  # announced as the real bytes below
        (_hub_path(good), good.read_bytes()),
        (outside, b'{"type":"user"}\n'),
        (_hub_path(big), big.read_bytes()),
    ]
    response = _batch(hub, _body(files, lie={"sha256": hashlib.sha256(liar_bytes).hexdigest()}))
    assert response.status_code == 200, response.content
    answer = response.json()["files"]
    assert answer[_hub_path(good)]["size"] == len(good.read_bytes())
    assert (
        answer[_hub_path(liar)]["status"] == 400 and "SHA-256" in answer[_hub_path(liar)]["error"]
    )
    assert answer[outside]["status"] == 400
    assert answer[_hub_path(big)]["status"] == 413 and "at most" in answer[_hub_path(big)]["error"]
    # Only the good file is on the hub: no temporary or lock file, no folder of the others.
    assert _stored() == {f"alice@laptop/{_hub_path(good)}": good.read_bytes()}
    folders = {p.name for p in (hub_folder() / "alice@laptop" / ".claude/projects").iterdir()}
    assert folders == {good.parent.name}
    assert list(HubFile.objects.values_list("path", flat=True)) == [_hub_path(good)]
    assert set(Session.objects.filter(namespace="alice@laptop").values_list("path", flat=True)) == {
        str(_on_hub(_hub_path(good)))
    }
    refused = AuditEntry.objects.filter(action="push-refused")
    assert refused.count() == 3 and all("alice@laptop" in e.detail for e in refused)


def test_a_batch_never_replaces_a_file_the_hub_holds(hub: Hub) -> None:
    source = SOURCES[0]
    data = source.read_bytes()
    path = _hub_path(source)
    assert _batch(hub, _body([(path, data)])).status_code == 200
    # The same bytes again (a batch whose answer was lost): taken, nothing changes.
    again = _batch(hub, _body([(path, data)]))
    assert again.json()["files"][path]["size"] == len(data)
    other = data + data.splitlines(keepends=True)[-1]
    answer = _batch(hub, _body([(path, other)])).json()["files"][path]
    assert answer["status"] == 409 and "holds another file" in answer["error"]
    assert _stored() == {f"alice@laptop/{path}": data}
    assert HubFile.objects.get(path=path).size == len(data)


def test_a_batch_where_the_hub_holds_a_folder_or_a_file_on_the_way_is_refused(hub: Hub) -> None:
    held, folder = SOURCES[0], SOURCES[1]
    assert _batch(hub, _body([(_hub_path(held), held.read_bytes())])).status_code == 200
    before = _stored()
    _on_hub(_hub_path(folder)).mkdir(parents=True)
    below = f"{_hub_path(held)}/x.jsonl"  # through a name the hub holds as a file
    files = [(_hub_path(folder), folder.read_bytes()), (below, folder.read_bytes())]
    answer = _batch(hub, _body(files)).json()["files"]
    assert answer[_hub_path(folder)]["status"] == 409
    assert "folder" in answer[_hub_path(folder)]["error"]
    assert answer[below]["status"] == 409 and "not a folder" in answer[below]["error"]
    assert _stored() == before
    assert list(HubFile.objects.values_list("path", flat=True)) == [_hub_path(held)]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"not zstd", 400, "not zstd"),
        (zstd.compress(b"no manifest line"), 400, "manifest"),
        (zstd.compress(b"[1, 2]\n"), 400, "manifest is"),
        (zstd.compress(b'{"files": [{"path": 1}]}\n'), 400, "each file"),
    ],
)
def test_a_batch_that_is_not_one_is_refused_whole(
    hub: Hub, body: bytes, status: int, says: str
) -> None:
    response = _batch(hub, body)
    assert response.status_code == status and says in response.json()["error"]
    assert _stored() == {} and not HubFile.objects.exists()


def test_a_batch_whose_bytes_are_not_its_manifests_is_refused_whole(hub: Hub) -> None:
    files = [(_hub_path(s), s.read_bytes()) for s in SOURCES[:2]]
    response = _batch(hub, _body(files, lie={"size": len(files[0][1]) + 1}))
    assert response.status_code == 400 and "announces" in response.json()["error"]
    assert _stored() == {} and not HubFile.objects.exists()
    assert AuditEntry.objects.filter(action="push-refused").exists()


def test_a_zstd_bomb_batch_is_refused_without_inflating_it(hub: Hub, settings) -> None:
    settings.HUB_MAX_CHUNK = 1 << 20
    bomb = zstd.compress(b"\n" + b"\0" * (64 << 20))  # 64 MB of zeros in a few KB
    response = _batch(hub, bomb)
    assert response.status_code == 400 and "manifest" in response.json()["error"]
    path, zeros = _hub_path(SOURCES[0]), b"\0" * (64 << 20)
    # Announced as what it holds: over the batch's limit, refused on its manifest alone.
    announced = _body([(path, zeros)])
    response = _batch(hub, announced)
    assert response.status_code == 413 and "at most" in response.json()["error"]
    # Announced as one byte: inflated no further than that byte and the next.
    lie = _body([(path, zeros)], lie={"size": 1})
    response = _batch(hub, lie)
    assert response.status_code == 400 and "more than" in response.json()["error"]
    assert _stored() == {}


def test_another_users_namespace_is_refused(hub: Hub) -> None:
    files = [(_hub_path(SOURCES[0]), SOURCES[0].read_bytes())]
    response = _batch(hub, _body(files), token=hub.bob)
    assert response.status_code == 403 and "not yours" in response.json()["error"]
    assert _stored() == {}


class Counted(HubClient):
    """The real client, which notes each endpoint it calls."""

    def __init__(self, login: Login) -> None:
        super().__init__(login)
        self.called: list[str] = []

    def call(self, method: str, endpoint: str, *args: Any, **kw: Any) -> bytes:
        self.called.append(endpoint)
        return super().call(method, endpoint, *args, **kw)


@pytest.mark.django_db(transaction=True)
def test_a_first_push_sends_the_small_new_files_in_one_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings, live_server
) -> None:
    home = tmp_path / "laptop"
    projects = home / ".claude" / "projects"
    shutil.copytree(CLAUDE, projects, ignore=shutil.ignore_patterns("*bigrepo*"))
    make_idle(projects)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    settings.SESSION_ROOTS = [projects]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.HUB_PROJECTS, settings.HUB_EXCLUDE = ["*"], []
    _, key = ApiToken.issue(name="laptop", user=_user("alice", "push_sessions"))
    client = Counted(Login(live_server.url, "alice@laptop", key))
    report = push(client)
    local = sorted(projects.rglob("*.jsonl"))
    assert len(local) >= 4 and report.problems == []
    assert client.called == ["state", "batch"]
    assert sorted(report.sent_files) == sorted(
        f".claude/projects/{p.relative_to(projects).as_posix()}" for p in local
    )
    for path in local:
        held = _on_hub(f".claude/projects/{path.relative_to(projects).as_posix()}")
        assert held.read_bytes() == path.read_bytes()
    # The subagent's file was indexed after its session's, in the same namespace.
    subagent = Session.objects.get(namespace="alice@laptop", is_subagent=True)
    assert Session.objects.filter(
        namespace="alice@laptop", session_id=subagent.owner_session_id
    ).exists()
    assert Session.objects.filter(namespace="alice@laptop").count() == len(local)
    # Nothing to send the second time: one request.
    client.called.clear()
    assert push(client).sent_files == [] and client.called == ["state"]


def test_the_longest_file_name_the_hub_takes_is_stored_by_a_batch(hub: Hub) -> None:
    """Its temporary name fits the disk too: stored (no session id in such a name: not
    imported, 422 for that file), never a 500."""
    from sessions_app.services.hub.namespaces import MAX_NAME

    source = SOURCES[0]
    path = f".claude/projects/{source.parent.name}/{'x' * (MAX_NAME - 6)}.jsonl"
    response = _batch(hub, _body([(path, source.read_bytes())]))
    assert response.status_code == 200, response.content
    assert response.json()["files"][path]["status"] == 422
    assert _stored() == {f"alice@laptop/{path}": source.read_bytes()}


@pytest.mark.django_db(transaction=True)
def test_a_first_batch_on_postgresql_builds_the_texts_index_whole(hub: Hub, monkeypatch) -> None:
    from django.db import connection

    from sessions_app.models import SearchText
    from sessions_app.services.searching import texts_index

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's trigram index")
    monkeypatch.setattr(texts_index, "BULK_MIN_BYTES", 0)  # these small files count as big

    def index() -> int | None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s)::oid", [texts_index.INDEX])
            return cursor.fetchone()[0]

    before = index()
    files = [(_hub_path(s), s.read_bytes()) for s in SOURCES]
    assert _batch(hub, _body(files)).status_code == 200
    after = index()
    assert after is not None and after != before, "dropped, then built whole, in the request"
    assert SearchText.objects.exists()
