"""Hostile pushes to a team hub: each is refused with its status, leaves nothing on the hub's
disk or in its index, and is written to the audit log as "push-refused" once its token is
known (without one it is only logged). (And one crash of the hub's own: bytes stored but
not indexed are indexed at the next push.)

The hub is this process, reached through Django's test client (REMOTE_ADDR 127.0.0.1
unless a test says otherwise); the hub's folder is the test's own tmp data folder.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import Permission, User
from django.http import HttpResponse
from django.test import Client

from sessions_app.models import ApiToken, AuditEntry, HubFile, Session
from sessions_app.services.hub.namespaces import hub_folder
from sessions_app.services.hub.proofs import HEAD_PROOF, TAIL_PROOF

from .corpus import FIXTURES

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.django_db

PROJECT = "-home-dev-code-webapp"
SOURCE = next((FIXTURES / "cli/claude" / PROJECT).glob("*.jsonl"))
PATH = f".claude/projects/{PROJECT}/{SOURCE.name}"


def _user(name: str, *perms: str) -> User:
    user = User.objects.create_user(name)  # no password: tokens only, and no hashing time
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


def _proof(data: bytes) -> tuple[str, str]:
    head = hashlib.sha256(data[:HEAD_PROOF]).hexdigest()
    tail = hashlib.sha256(data[max(0, len(data) - TAIL_PROOF) :]).hexdigest()
    return head, tail


def _stored() -> dict[str, bytes]:
    """Every file under the hub's folder (staging files too), by its path there."""
    base = hub_folder()
    if not base.exists():
        return {}
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if not p.is_dir()}


@dataclass
class Hub:
    client: Client
    alice: str  # alice's token: push_sessions
    bob: str  # bob's token: push_sessions too, but not alice's namespaces
    mute: str  # carol's token: write_sessions, not push_sessions

    def chunk(
        self,
        raw: bytes,
        *,
        token: str | None = None,
        namespace: str = "alice@laptop",
        path: str = PATH,
        offset: int = 0,
        staged: bool = True,
        held: bytes = b"",
        body: bytes | None = None,
        length: int | None = None,
        sha256: str | None = None,
        **meta: str,
    ) -> HttpResponse:
        """POST /api/hub/chunk of `raw` (or of `body` as sent), announced as `length`/`sha256`."""
        head, tail = _proof(held) if held else ("", "")
        query = {
            "namespace": namespace,
            "path": path,
            "offset": offset,
            "length": len(raw) if length is None else length,
            "sha256": hashlib.sha256(raw).hexdigest() if sha256 is None else sha256,
            "head": head,
            "tail": tail,
            "staged": "1" if staged else "0",
        }
        headers = {} if token == "" else {"HTTP_AUTHORIZATION": f"Bearer {token or self.alice}"}
        return self.client.post(
            f"/api/hub/chunk?{urllib.parse.urlencode(query)}",
            zstd.compress(raw) if body is None else body,
            content_type="application/zstd",
            **headers,
            **meta,
        )

    def commit(self, data: bytes, *, path: str = PATH) -> HttpResponse:
        query = {
            "namespace": "alice@laptop",
            "path": path,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        return self.client.post(
            f"/api/hub/commit?{urllib.parse.urlencode(query)}",
            b"",
            content_type="application/octet-stream",
            HTTP_AUTHORIZATION=f"Bearer {self.alice}",
        )


@pytest.fixture
def hub(tmp_path: Path, settings) -> Hub:
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    tokens = []
    for name, perms in (
        ("alice", ("push_sessions", "write_sessions")),
        ("bob", ("push_sessions", "write_sessions")),
        ("carol", ("write_sessions",)),
    ):
        _, key = ApiToken.issue(name="laptop", user=_user(name, *perms))
        tokens.append(key)
    return Hub(Client(), *tokens)


def _refused(response: HttpResponse, status: int, says: str, *, before: dict | None = None) -> None:
    """Refused with `status` and a JSON error saying `says`; nothing stored; audited."""
    assert response.status_code == status, response.content
    assert says in response.json()["error"]
    assert _stored() == (before or {})
    if before is None:
        assert not hub_folder().exists() or not any(hub_folder().iterdir())  # no folder either
        assert not HubFile.objects.exists()
        assert not Session.objects.filter(namespace="alice@laptop").exists()
    refusal = AuditEntry.objects.filter(action="push-refused").first()
    assert refusal is not None and "alice@laptop" in refusal.detail


def test_a_valid_push_is_taken(hub: Hub) -> None:
    """The control: the requests the hostile ones are made from work when honest."""
    data = SOURCE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    assert hub.chunk(data[:cut]).status_code == 200
    assert hub.chunk(data[cut:], offset=cut, held=data[:cut]).status_code == 200
    assert hub.commit(data).status_code == 200
    assert _stored() == {f"alice@laptop/{PATH}": data}
    assert HubFile.objects.get(path=PATH).size == len(data)
    assert not AuditEntry.objects.filter(action="push-refused").exists()


def test_a_file_the_hub_stored_but_did_not_index_before_it_died_is_indexed_at_the_next_push(
    hub: Hub,
) -> None:
    """Not hostile, the hub's own crash: the bytes are in place (fsynced, renamed) but the
    process was killed before the import; the machine's next push finds them up to date,
    so the hub catches its index up when asked what it holds."""
    data = SOURCE.read_bytes()
    stored = hub_folder() / "alice@laptop" / PATH
    stored.parent.mkdir(parents=True)
    stored.write_bytes(data)
    response = hub.client.post(
        "/api/hub/state?namespace=alice@laptop",
        orjson.dumps({"paths": [PATH]}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {hub.alice}",
    )
    assert response.json()["files"][PATH]["size"] == len(data)
    session = Session.objects.get(namespace="alice@laptop", session_id=SOURCE.stem)
    assert session.path == str(stored)
    assert HubFile.objects.get(path=PATH).size == len(data)


def test_another_users_token_is_refused(hub: Hub) -> None:
    response = hub.chunk(SOURCE.read_bytes(), token=hub.bob)
    _refused(response, 403, "not yours")


def test_a_token_without_the_push_permission_is_refused(hub: Hub) -> None:
    response = hub.chunk(SOURCE.read_bytes(), token=hub.mute)
    _refused(response, 403, "may not push")


def test_no_token_is_refused(hub: Hub) -> None:
    """Refused and nothing stored, and no audit row either: no one known sent it (it is
    logged; tests/test_audit_bounds.py)."""
    for token in ("", "not-a-token"):
        response = hub.chunk(SOURCE.read_bytes(), token=token)
        assert response.status_code == 401 and "bearer token" in response.json()["error"]
        assert _stored() == {} and not HubFile.objects.exists()
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    "lie",
    ["head", "tail", "offset", "no such file"],
)
def test_an_append_whose_proof_is_wrong_is_refused(hub: Hub, lie: str) -> None:
    data = SOURCE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    if lie != "no such file":
        hub.chunk(data[:cut])
        hub.commit(data[:cut])
    before = _stored()
    rest = data[cut:]
    if lie == "head":
        forged = b"x" + data[1:cut]  # the same size and last bytes, another start
        response = hub.chunk(rest, offset=cut, staged=False, held=forged)
    elif lie == "tail":
        forged = data[: cut - 5] + b"xxxx\n"  # the same size and first bytes, another end
        response = hub.chunk(rest, offset=cut, staged=False, held=forged)
    elif lie == "offset":
        response = hub.chunk(rest[10:], offset=cut + 10, staged=False, held=data[: cut + 10])
    else:
        response = hub.chunk(rest, offset=cut, staged=False, held=data[:cut])
    status = 409
    _refused(response, status, PATH, before=before or None)
    if before:
        assert HubFile.objects.get(path=PATH).size == cut
        assert Session.objects.get(namespace="alice@laptop").path.endswith(SOURCE.name)


def test_a_staged_chunk_whose_proof_is_wrong_is_refused(hub: Hub) -> None:
    data = SOURCE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    assert hub.chunk(data[:cut]).status_code == 200
    before = _stored()
    response = hub.chunk(data[cut:], offset=cut, held=b"{}" + data[2:cut])
    assert response.status_code == 409
    assert _stored() == before  # the staged prefix stays as it was, nothing added
    assert AuditEntry.objects.filter(action="push-refused").exists()


@pytest.mark.parametrize(
    ("announced", "says"),
    [
        ({"length": 100}, "not the 100 announced"),
        ({"length": 0}, "not the 0 announced"),
        ({"sha256": "0" * 64}, "SHA-256"),
        ({"body": b"\x28\xb5\x2f\xfd-not-zstd-after-its-magic"}, "not zstd"),
        ({"body": b'{"type":"user"}\n'}, "not zstd"),
    ],
)
def test_a_chunk_that_is_not_the_bytes_announced_is_refused(
    hub: Hub, announced: dict, says: str
) -> None:
    response = hub.chunk(SOURCE.read_bytes(), **announced)
    _refused(response, 400, says)


def test_a_zstd_bomb_is_refused_without_inflating_it(hub: Hub) -> None:
    bomb = zstd.compress(b"\n" * (256 << 20), level=19)  # 256 MB in a few kB
    assert len(bomb) < 64 << 10
    raw = b'{"type":"user"}\n'
    response = hub.chunk(raw, body=bomb)
    _refused(response, 400, f"not the {len(raw)} announced")
    # Announced as what it holds, it is over the hub's chunk size: refused before inflating.
    response = hub.chunk(raw, body=bomb, length=256 << 20)
    _refused(response, 413, "at most")


@pytest.mark.parametrize(
    "path",
    [
        f".claude/projects/{PROJECT}/../../.credentials.json",
        f".claude/projects/../../.ssh/{SOURCE.name}",
        f"/home/alice/.claude/projects/{PROJECT}/{SOURCE.name}",
        ".claude/.credentials.json",
        ".claude/projects/.credentials.json",
        ".claude/settings.json",
        ".ssh/id_rsa",
        ".ssh/id_rsa.jsonl",
        ".bashrc",
        f".claude/projects/{PROJECT}/.git/{SOURCE.name}",
        f".claude/projects/{PROJECT}\\..\\..\\x.jsonl",
        f".claude/projects/{PROJECT}/x.jsonl\x00.txt",
        f".claude/projects/{PROJECT}/x\n.jsonl",
        "",
    ],
)
def test_a_path_outside_the_clis_session_folders_is_refused(hub: Hub, path: str) -> None:
    response = hub.chunk(SOURCE.read_bytes(), path=path)
    _refused(response, 400, "")
    assert AuditEntry.objects.filter(action="push-refused").count() == 1


def test_a_commit_of_a_bad_path_is_refused(hub: Hub) -> None:
    response = hub.commit(SOURCE.read_bytes(), path=".claude/../.ssh/x.jsonl")
    _refused(response, 400, "'..'")


def test_a_2_gb_body_is_refused_before_it_is_read(hub: Hub) -> None:
    # The test client's body cannot be read past its 9 bytes: reading it would fail the test.
    forged = str(2 << 30)
    response = hub.chunk(b"small", CONTENT_LENGTH=forged)
    _refused(response, 413, "at most")
    response = hub.client.post(
        "/api/hub/state?namespace=alice@laptop",
        b'{"paths":[]}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {hub.alice}",
        CONTENT_LENGTH=forged,
    )
    _refused(response, 413, "at most")


def test_plain_http_from_off_this_machine_is_refused(team, hub: Hub) -> None:
    # Team mode: only a team server answers other machines (local mode: loopback only).
    response = hub.chunk(SOURCE.read_bytes(), REMOTE_ADDR="203.0.113.7")
    _refused(response, 403, "HTTPS only")
    assert AuditEntry.objects.get(action="push-refused").remote_addr == "203.0.113.7"
    # The same over HTTPS is taken (the check is the transport, not the address).
    response = hub.chunk(SOURCE.read_bytes(), REMOTE_ADDR="203.0.113.7", secure=True)
    assert response.status_code == 200


# -- issue 41: names in full, a page no stored value can take down, and 4xx never 500 --


def _pushed(hub: Hub, data: bytes, *, path: str = PATH) -> None:
    assert hub.chunk(data, path=path).status_code == 200
    assert hub.commit(data, path=path).status_code == 200


@pytest.mark.parametrize("namespace", ["alice@laptop\n", "alice@laptop\r"])
def test_a_namespace_with_a_trailing_line_break_is_refused(hub: Hub, namespace: str) -> None:
    """`$` matches before a final newline: the name is matched in full, on chunk and commit."""
    response = hub.chunk(SOURCE.read_bytes(), namespace=namespace)
    assert response.status_code == 400, response.content
    assert "not a namespace" in response.json()["error"]
    query = urllib.parse.urlencode({"namespace": namespace, "path": PATH, "size": 1, "sha256": "0"})
    response = hub.client.post(
        f"/api/hub/commit?{query}",
        b"",
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=f"Bearer {hub.alice}",
    )
    assert response.status_code == 400, response.content
    assert "not a namespace" in response.json()["error"]
    assert _stored() == {}
    assert not Session.objects.exclude(namespace="").exists()


def test_the_name_patterns_match_in_full() -> None:
    from sessions_app.formats import is_session_id
    from sessions_app.selectors.family import AGENT_ID_RE
    from sessions_app.session_refs import BadRef, is_namespace, ref_parse

    assert is_namespace("alice@laptop")
    assert not is_namespace("alice@laptop\n")
    assert is_session_id(SOURCE.stem) and not is_session_id(SOURCE.stem + "\n")
    assert AGENT_ID_RE.match("a0751b2961eeab05e") and not AGENT_ID_RE.match("a0751b\n")
    with pytest.raises(BadRef):
        ref_parse("d62afd75-12b1-4077-921c-1fa1eda79364\n")
    with pytest.raises(BadRef):
        ref_parse("alice@laptop/d62afd75-12b1-4077-921c-1fa1eda79364\n")


@pytest.mark.parametrize("bad", ["alice@laptop\n", "no namespace at all", "a/b@c"])
def test_one_bad_stored_namespace_does_not_take_the_pages_down(
    hub: Hub, bad: str, client: Client
) -> None:
    """A row stored before names were checked in full (or by hand): the lists and search
    show the session unlinked, every other one as before."""
    from sessions_app.models import Project
    from sessions_app.services.searching import search_refresh

    _pushed(hub, SOURCE.read_bytes())
    assert not search_refresh().errors
    session = Session.objects.get(namespace="alice@laptop")
    Session.objects.filter(pk=session.pk).update(namespace=bad)
    Project.objects.filter(pk=session.project_id).update(namespace=bad)
    word = session.title.split()[0] if session.title else "the"
    pages = ("/", "/recent/", f"/search/?q={urllib.parse.quote(word)}")
    for url in (*pages, f"/projects/{session.project_id}/"):
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:2000])
    assert str(session.session_id) in client.get("/recent/").content.decode()
    found = client.get(f"/search/?q={urllib.parse.quote(word)}").content.decode()
    assert '<span class="hit-link">' in found  # the hit is shown, unlinked


@pytest.mark.parametrize("query", ["page=²", "page=³", "after=²", "after=²:x", "before=¹:"])
def test_a_page_number_of_unicode_digits_is_the_first_page(
    hub: Hub, client: Client, query: str
) -> None:
    """`"²".isdigit()` is true and `int("²")` fails: only ASCII digits are a page number."""
    _pushed(hub, SOURCE.read_bytes())
    project = Session.objects.get(namespace="alice@laptop").project_id
    for url in ("/recent/", f"/projects/{project}/"):
        response = client.get(f"{url}?{query}")
        assert response.status_code == 200, (url, response.content[:500])
        assert SOURCE.stem in response.content.decode()


def test_a_turn_of_unicode_digits_is_refused_not_a_crash() -> None:
    """The same `isdigit()` in the fork and rewind inputs: a clear refusal, not a ValueError."""
    from sessions_app.services.branching.inputs import InvalidTurn, turn_input

    assert turn_input("12") == 12
    for text in ("²", "-³", "１２"):
        with pytest.raises(InvalidTurn):
            turn_input(text)


def test_forwarded_headers_count_only_from_the_proxys_address(team, hub: Hub, settings) -> None:
    """Behind the shipped nginx (TRUSTED_PROXY, TLS), a client that reaches the app past the
    proxy cannot say it is on loopback, nor that it came over HTTPS (a team server: local
    mode answers loopback peers only)."""
    settings.TRUSTED_PROXY = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    data = SOURCE.read_bytes()
    for forged in (
        {"HTTP_X_FORWARDED_FOR": "127.0.0.1"},
        {"HTTP_X_FORWARDED_PROTO": "https"},
    ):
        response = hub.chunk(data, REMOTE_ADDR="203.0.113.7", **forged)
        _refused(response, 403, "HTTPS only")
        assert AuditEntry.objects.filter(action="push-refused").last().remote_addr == (
            "203.0.113.7"
        )
    # From the proxy's own address (loopback by default) the headers are its word.
    response = hub.chunk(
        data,
        REMOTE_ADDR="127.0.0.1",
        HTTP_X_FORWARDED_FOR="198.51.100.4",
        HTTP_X_FORWARDED_PROTO="https",
    )
    assert response.status_code == 200, response.content
    assert AuditEntry.objects.get(action="push").remote_addr == "198.51.100.4"
    # Another proxy address is a setting.
    settings.PROXY_ADDRESSES = ["192.0.2.10"]
    response = hub.chunk(data, REMOTE_ADDR="192.0.2.10", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200, response.content


def _flock_held_in(folder: Path) -> bool:
    """Whether this process holds a flock on a file in `folder` (read from /proc/locks)."""
    inodes = {str(p.stat().st_ino) for p in folder.iterdir()} if folder.is_dir() else set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "FLOCK" in fields and "->" not in fields and str(os.getpid()) in fields:
            inode = next(f for f in fields if f.count(":") == 2).rsplit(":", 1)[1]
            if inode in inodes:
                return True
    return False


@pytest.mark.django_db(transaction=True)
def test_a_chunk_at_offset_0_during_a_commit_never_truncates_the_live_file(hub: Hub) -> None:
    """The `--watch` service commits a file while a manual push starts it over: the chunk
    must not write through a handle the commit renamed into place (40 turns -> 1)."""
    data = SOURCE.read_bytes()
    # Padding records (no turns) make the commit's SHA-256 of the staged file take a while.
    pad = b'{"type":"progress","data":"' + b"x" * (1 << 20) + b'"}\n'
    whole = data + pad * 24
    assert hub.chunk(whole).status_code == 200
    first = data[: data.index(b"\n") + 1]
    folder = hub_folder() / "alice@laptop" / PATH.rsplit("/", 1)[0]
    answers: dict[str, HttpResponse] = {}

    def commit() -> None:
        answers["commit"] = Hub(Client(), hub.alice, hub.bob, hub.mute).commit(whole)

    committing = threading.Thread(target=commit)
    committing.start()
    deadline = time.monotonic() + 30
    while not _flock_held_in(folder) and committing.is_alive():
        assert time.monotonic() < deadline, "the commit never took its lock"
        time.sleep(0.001)
    # The commit holds its lock and is reading the staged file: a push starts it over.
    answers["chunk"] = Hub(Client(), hub.alice, hub.bob, hub.mute).chunk(first)
    committing.join(timeout=60)
    assert answers["commit"].status_code == 200, answers["commit"].content
    assert answers["chunk"].status_code in (200, 409), answers["chunk"].content
    live = hub_folder() / "alice@laptop" / PATH
    assert live.read_bytes() == whole  # whole, not the one line of the new push
    staging = live.with_name(f".{live.name}.push")
    if answers["chunk"].status_code == 200:
        assert staging.read_bytes() == first  # the new push started a staging file of its own
    session = Session.objects.get(namespace="alice@laptop")
    assert session.turn_count > 1
    assert HubFile.objects.get(path=PATH).size == len(whole)


def _state(hub: Hub, paths: list[str]) -> HttpResponse:
    return hub.client.post(
        "/api/hub/state?namespace=alice@laptop",
        orjson.dumps({"paths": paths}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {hub.alice}",
    )


@pytest.mark.parametrize(
    "path",
    [
        f".claude/projects/{'p' * 300}/{SOURCE.name}",  # a folder name over NAME_MAX
        f".claude/projects/{PROJECT}/{'x' * 244}.jsonl",  # 250 bytes: its staging name is not
        f".claude/projects/{PROJECT}/{'é' * 122}.jsonl",  # 250 bytes in 128 characters
    ],
)
def test_a_name_the_hubs_disk_cannot_hold_is_refused(hub: Hub, path: str) -> None:
    """Refused with 400 on chunk and on commit, nothing made; never a 500."""
    _refused(hub.chunk(SOURCE.read_bytes(), path=path), 400, "bytes")
    _refused(hub.commit(SOURCE.read_bytes(), path=path), 400, "bytes")
    assert _state(hub, [path]).json()["files"] == {}


def test_the_longest_file_name_the_hub_takes_is_stored(hub: Hub) -> None:
    """Its staging name fits the disk; the commit stores it (no session id in such a
    name: not imported, which is a 422, not a 500)."""
    from sessions_app.services.hub.namespaces import MAX_NAME

    path = f".claude/projects/{PROJECT}/{'x' * (MAX_NAME - 6)}.jsonl"
    assert hub.chunk(SOURCE.read_bytes(), path=path).status_code == 200
    assert hub.commit(SOURCE.read_bytes(), path=path).status_code == 422
    assert _stored() == {f"alice@laptop/{path}": SOURCE.read_bytes()}


def test_a_commit_below_a_file_is_refused(hub: Hub) -> None:
    """`<file>.jsonl/y.jsonl`: the hub holds a file where the path wants a folder."""
    data = SOURCE.read_bytes()
    _pushed(hub, data)
    before = _stored()
    below = f"{PATH}/y.jsonl"
    _refused(hub.commit(data, path=below), 409, "not a folder", before=before)
    _refused(hub.chunk(data, path=below), 409, "not a folder", before=before)


def test_a_state_naming_a_folder_answers_for_the_other_paths(hub: Hub) -> None:
    """A path where the hub has a folder is not a file it holds; the rest of the batch is
    answered as ever."""
    data = SOURCE.read_bytes()
    _pushed(hub, data)
    folder = f".claude/projects/{PROJECT}.jsonl"
    (hub_folder() / "alice@laptop" / folder).mkdir()
    response = _state(hub, [folder, PATH])
    assert response.status_code == 200, response.content
    assert response.json()["files"] == {PATH: _held_json(data)}


def _held_json(data: bytes) -> dict[str, object]:
    head, tail = _proof(data)
    return {"size": len(data), "head": head, "tail": tail}


@pytest.mark.parametrize("offset", [5, 1 << 20])
def test_a_refused_chunk_leaves_no_staging_file_nor_folders(hub: Hub, offset: int) -> None:
    """Offset 5 of a path the hub holds nothing of: 409, and nothing made on its disk."""
    response = hub.chunk(SOURCE.read_bytes()[:100], offset=offset, held=b"x" * offset)
    _refused(response, 409, PATH)


def test_every_spelling_of_one_path_is_one_file(hub: Hub) -> None:
    """`projects//p`, `projects///p`: one HubFile, one import, stored under one spelling;
    each spelling is answered as asked."""
    data = SOURCE.read_bytes()
    stored = hub_folder() / "alice@laptop" / PATH
    stored.parent.mkdir(parents=True)
    stored.write_bytes(data)  # stored but not indexed: the state imports it
    root, rest = PATH.split("/projects/")
    spellings = [f"{root}/projects/{'/' * n}{rest.replace('/', '/' * (n + 1))}" for n in range(50)]
    spellings += [f"{root}//projects/{rest}", f"{PATH}/", f"{root}/./projects/{rest}"]
    response = _state(hub, spellings)
    assert response.status_code == 200, response.content
    files = response.json()["files"]
    assert set(files) == set(spellings)
    assert list(HubFile.objects.values_list("path", flat=True)) == [PATH]
    assert Session.objects.filter(namespace="alice@laptop").count() == 1
    # A chunk and a commit under another spelling record the one path too.
    other = f"{root}/projects//{rest}"
    assert hub.chunk(data, path=other).status_code == 200
    assert hub.commit(data, path=other).status_code == 200
    assert list(HubFile.objects.values_list("path", flat=True)) == [PATH]


def test_the_pushing_machine_says_which_names_a_hub_cannot_take_before_sending(
    tmp_path: Path, settings
) -> None:
    """A 250-byte file name can never be pushed: the machine leaves it out and says why,
    with no request for it; its other files go as ever."""
    from sessions_app.services.hub.choosing import PushReport, local_files

    settings.DATA_DIR = tmp_path / "data"
    folder = tmp_path / "home" / ".claude" / "projects" / PROJECT
    folder.mkdir(parents=True)
    long_name = f"agent-{'a' * 238}.jsonl"  # a subagent's file: any id the CLI gives it
    (folder / SOURCE.stem / "subagents").mkdir(parents=True)
    (folder / SOURCE.stem / "subagents" / long_name).write_bytes(SOURCE.read_bytes())
    (folder / SOURCE.name).write_bytes(SOURCE.read_bytes())
    settings.SESSION_ROOTS = [folder.parent]
    settings.HUB_PROJECTS = ["*"]
    report = PushReport()
    found = [local.path.name for local in local_files(report)]
    assert found == [SOURCE.name]
    assert len(report.problems) == 1
    assert long_name in report.problems[0] and "at most" in report.problems[0]


@pytest.mark.parametrize("action", ["restore", "rewind"])
def test_a_pushed_session_is_not_restored_nor_rewound_on_the_hub_403(hub: Hub, action: str) -> None:
    """Restore answers as rewind and undo do (403, as the README says), in words that read."""
    data = SOURCE.read_bytes()
    _pushed(hub, data)
    live = hub_folder() / "alice@laptop" / PATH
    if action == "restore":
        live.unlink()  # removed: what a restore would write back
    body = b'{"turn": 1}' if action == "rewind" else b"{}"
    response = hub.client.post(
        f"/api/sessions/alice@laptop/{SOURCE.stem}/{action}",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {hub.alice}",
    )
    assert response.status_code == 403, response.content
    says = response.json()["error"]
    assert f"or {action} it on that machine." in says
    assert "or a " not in says
    assert live.exists() == (action == "rewind")
