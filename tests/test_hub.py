"""A team hub: a machine pushes its session files, the hub keeps them byte for byte in
their own namespace, forks made there come back to the machine.

The hub is this test's live server; the machine is a home folder of its own, whose
pushes and pulls go over HTTP to the hub as `push_sessions` and `pull_sessions` do.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command

from sessions_app.models import ApiToken, AuditEntry, HubNamespace, Session
from sessions_app.services.audit import API, Actor
from sessions_app.services.branching.inputs import fork_input
from sessions_app.services.hub.client import Hub, HubError, Login, login_load, login_save
from sessions_app.services.hub.namespaces import hub_folder
from sessions_app.services.hub.pulling import pull
from sessions_app.services.hub.pushing import push
from sessions_app.services.worktrees import fork_where_asked

from .corpus import FIXTURES, make_idle

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.django_db(transaction=True)

WEBAPP = "cli/claude/-home-dev-code-webapp"
PROJECT = "-home-dev-code-webapp"


def _user(name: str, *perms: str) -> User:
    user = User.objects.create_user(name, password="x")
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings) -> Path:
    """A laptop's home: one Claude project of the fixtures, the only root it pushes."""
    home = tmp_path / "laptop"
    projects = home / ".claude" / "projects"
    shutil.copytree(FIXTURES / WEBAPP, projects / PROJECT)
    make_idle(projects)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    settings.SESSION_ROOTS = [projects]
    settings.DATA_DIR = tmp_path / "data"  # the hub's folder and the login: this test's own
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.HUB_PROJECTS = ["*"]
    settings.HUB_EXCLUDE = []
    return projects / PROJECT


@pytest.fixture
def alice(live_server) -> Hub:
    user = _user("alice", "push_sessions", "write_sessions")
    _, key = ApiToken.issue(name="laptop", user=user)
    return Hub(Login(live_server.url, "alice@laptop", key))


def _hub_file(namespace: str, local: Path) -> Path:
    return hub_folder() / namespace / ".claude" / "projects" / PROJECT / local.name


def _sessions(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl"))


def _owners_fork(source: Session, turn: int) -> Session:
    """A fork of `source` made on the hub by its namespace's owner, through the doors' path
    (the pages', the API's): the hub records who made it, and it goes to their machine."""
    owner = HubNamespace.objects.get(name=source.namespace).user
    forked = fork_where_asked(session=source, asked=fork_input(turn=turn), worktree=None)
    forked.audit(Actor(owner.username, API, user=owner), source=source, turn=turn)
    return forked.session


def test_a_push_stores_every_file_byte_for_byte_and_indexes_it(machine: Path, alice: Hub) -> None:
    report = push(alice)
    files = _sessions(machine)
    assert sorted(report.sent_files) == sorted(
        f".claude/projects/{PROJECT}/{p.name}" for p in files
    )
    for local in files:
        assert _hub_file("alice@laptop", local).read_bytes() == local.read_bytes()
        session = Session.objects.get(namespace="alice@laptop", session_id=local.stem)
        assert session.project.namespace == "alice@laptop"
        assert session.line_count == len(local.read_bytes().splitlines())
    assert report.wire_bytes < report.bytes_sent  # compressed on the wire


def test_a_second_push_sends_nothing_and_an_append_sends_only_the_new_bytes(
    machine: Path, alice: Hub
) -> None:
    push(alice)
    again = push(alice)
    assert again.sent_files == [] and again.bytes_sent == 0
    local = _sessions(machine)[0]
    line = local.read_bytes().splitlines()[-1] + b"\n"
    with local.open("ab") as f:
        f.write(line)
    grown = push(alice)
    assert grown.bytes_sent == len(line)
    assert _hub_file("alice@laptop", local).read_bytes() == local.read_bytes()
    session = Session.objects.get(namespace="alice@laptop", session_id=local.stem)
    assert session.line_count == len(local.read_bytes().splitlines())


def test_a_file_rewritten_on_the_machine_goes_whole_again(machine: Path, alice: Hub) -> None:
    push(alice)
    local = _sessions(machine)[0]
    lines = local.read_bytes().splitlines(keepends=True)
    local.write_bytes(b"".join(lines[: len(lines) // 2]))  # as a rewind leaves it
    report = push(alice)
    assert report.sent_files == [f".claude/projects/{PROJECT}/{local.name}"]
    assert report.bytes_sent == local.stat().st_size
    assert _hub_file("alice@laptop", local).read_bytes() == local.read_bytes()
    session = Session.objects.get(namespace="alice@laptop", session_id=local.stem)
    assert session.line_count == len(lines) // 2


def test_a_push_cut_off_midway_is_continued_by_the_next(machine: Path, alice: Hub) -> None:
    local = max(_sessions(machine), key=lambda p: p.stat().st_size)
    data = local.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    first = data[:cut]
    path = f".claude/projects/{PROJECT}/{local.name}"
    params = {
        "path": path,
        "offset": 0,
        "length": len(first),
        "sha256": hashlib.sha256(first).hexdigest(),
        "head": "",
        "tail": "",
        "staged": "1",
    }
    alice.json("POST", "chunk", params, body=zstd.compress(first), content_type="application/zstd")
    assert not _hub_file("alice@laptop", local).exists()  # staged: not there until whole
    report = push(alice, only=[local])
    assert report.bytes_sent == len(data) - cut
    assert _hub_file("alice@laptop", local).read_bytes() == data


def test_the_same_session_id_from_two_machines_is_two_sessions(
    machine: Path, alice: Hub, live_server
) -> None:
    push(alice)
    desktop = Hub(Login(live_server.url, "alice@desktop", alice.login.token))
    push(desktop)
    local = _sessions(machine)[0]
    both = Session.objects.filter(session_id=local.stem).order_by("namespace")
    assert [s.namespace for s in both] == ["alice@desktop", "alice@laptop"]
    assert both[0].pk != both[1].pk and both[0].path != both[1].path
    from django.test import Client

    client = Client()
    for session in both:
        page = client.get(f"/sessions/{session.ref}/")
        assert page.status_code == 200
        assert session.namespace in page.content.decode()


def test_a_fork_made_on_the_hub_is_pulled_back_new_and_checked(machine: Path, alice: Hub) -> None:
    push(alice)
    local = _sessions(machine)[0]
    source = Session.objects.get(namespace="alice@laptop", session_id=local.stem)
    fork = _owners_fork(source, turn=1)
    assert fork.namespace == "alice@laptop"
    hub_copy = Path(fork.path)
    report = pull(alice)
    pulled = machine / hub_copy.name
    assert report.written == [pulled]
    assert pulled.read_bytes() == hub_copy.read_bytes()
    assert Session.objects.get(namespace="", session_id=fork.session_id).path == str(pulled)
    # Taken once: not offered again, and the next push finds it up to date.
    assert alice.json("GET", "pulls")["files"] == []
    assert push(alice).sent_files == []


def test_a_pull_never_overwrites_a_file_that_is_there(machine: Path, alice: Hub) -> None:
    push(alice)
    source = Session.objects.get(namespace="alice@laptop", session_id=_sessions(machine)[0].stem)
    fork = _owners_fork(source, turn=1)
    squatter = machine / Path(fork.path).name
    squatter.write_bytes(b'{"mine": true}\n')
    report = pull(alice)
    assert report.written == [] and "never overwritten" in report.problems[0]
    assert squatter.read_bytes() == b'{"mine": true}\n'


def test_a_pushed_session_is_read_only_on_the_hub(machine: Path, alice: Hub) -> None:
    push(alice)
    source = Session.objects.get(namespace="alice@laptop", session_id=_sessions(machine)[0].stem)
    from django.test import Client

    response = Client().post(
        f"/api/sessions/{source.ref}/rewind",
        orjson.dumps({"turn": 2}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {alice.login.token}",
    )
    assert response.status_code == 403
    assert "belongs to alice@laptop" in response.json()["error"]
    assert (
        _hub_file("alice@laptop", Path(source.path)).read_bytes()
        == (machine / Path(source.path).name).read_bytes()
    )


def test_the_login_is_kept_private_and_plain_http_off_this_machine_is_refused(
    machine: Path, alice: Hub
) -> None:
    path = login_save(alice.login)
    assert path.stat().st_mode & 0o777 == 0o600
    assert login_load() == alice.login
    with pytest.raises(HubError, match="HTTPS only"):
        from sessions_app.services.hub.client import check_url

        check_url("http://hub.example")


def test_push_sessions_needs_the_projects_said(machine: Path, alice: Hub, settings) -> None:
    settings.HUB_PROJECTS = []
    login_save(alice.login)
    with pytest.raises(Exception, match="BRANCHBOARD_HUB_PROJECTS"):
        call_command("push_sessions")
    assert not (hub_folder() / "alice@laptop").exists()


def test_excluded_projects_never_leave(machine: Path, alice: Hub, settings) -> None:
    settings.HUB_EXCLUDE = ["/home/dev/code/webapp"]
    report = push(alice)
    assert report.sent_files == [] and len(report.left_out) == len(_sessions(machine))
    assert not HubNamespace.objects.filter(name="alice@laptop", files__isnull=False).exists()
    assert not (hub_folder() / "alice@laptop" / ".claude").exists()


def test_a_dry_run_lists_and_sends_nothing(machine: Path, alice: Hub) -> None:
    report = push(alice, dry_run=True)
    assert {what for what, _ in report.planned} == {"new"}
    assert len(report.planned) == len(_sessions(machine))
    assert not (hub_folder() / "alice@laptop" / ".claude").exists()


def test_every_push_is_audited(machine: Path, alice: Hub) -> None:
    push(alice)
    pushes = AuditEntry.objects.filter(action="push")
    assert pushes.count() >= len(_sessions(machine))
    assert all(e.actor == "token:laptop" and "alice@laptop" in e.detail for e in pushes)


def test_a_pushed_sessions_page_offers_branching_but_no_rewind_or_run(
    machine: Path, alice: Hub, settings
) -> None:
    from django.test import Client

    settings.ALLOW_RUNS = True
    push(alice)
    local = max(_sessions(machine), key=lambda p: p.stat().st_size)
    source = Session.objects.get(namespace="alice@laptop", session_id=local.stem)
    page = Client().get(f"/sessions/{source.ref}/").content.decode()
    assert 'id="pushed-note"' in page and "Pushed from <strong>alice@laptop</strong>" in page
    assert 'class="branch-here"' in page and 'class="edit-fork"' in page
    assert 'class="rewind-here"' not in page and 'id="run-panel"' not in page
    # The machine's own copy of the same session is its own: rewinding is offered there.
    from sessions_app.services.importing import sessions_import

    sessions_import(roots=settings.SESSION_ROOTS)
    mine = Session.objects.get(namespace="", session_id=local.stem)
    page = Client().get(f"/sessions/{mine.ref}/").content.decode()
    assert 'class="rewind-here"' in page and 'id="pushed-note"' not in page


def test_a_pushed_line_is_searchable_and_named_by_its_ref_when_the_push_returns(
    machine: Path, alice: Hub
) -> None:
    from django.test import Client

    push(alice)
    local = _sessions(machine)[0]
    word = "zqxhubword"
    line = orjson.loads(local.read_bytes().splitlines()[-1])
    line.update(type="user", message={"role": "user", "content": f"find {word} please"})
    line["uuid"], line["parentUuid"] = "11111111-2222-4333-8444-555555555555", line.get("uuid")
    with local.open("ab") as f:
        f.write(orjson.dumps(line) + b"\n")
    push(alice)
    found = (
        Client()
        .get(
            "/api/search", {"q": word, "all": "1"}, HTTP_AUTHORIZATION=f"Bearer {alice.login.token}"
        )
        .json()
    )
    refs = [s["ref"] for s in found["sessions"]]
    assert refs == [f"alice@laptop/{local.stem}"]


def test_a_big_file_is_committed_then_its_search_and_usage_caught_up_by_a_request_of_its_own(
    machine: Path, alice: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessions_app.services.hub import indexing

    monkeypatch.setattr(indexing, "INLINE_CATCH_UP", 0)  # every whole file counts as big
    calls: list[str] = []
    real = alice.call
    monkeypatch.setattr(alice, "call", lambda m, e, *a, **k: calls.append(e) or real(m, e, *a, **k))
    push(alice)
    files = _sessions(machine)
    assert calls.count("commit") == calls.count("catch-up") == len(files)
    for local in files:
        session = Session.objects.get(namespace="alice@laptop", session_id=local.stem)
        assert session.search_lines == session.line_count
        assert session.usage_lines == session.line_count


def test_a_file_the_hub_refuses_is_reported_and_the_others_still_go(
    machine: Path, alice: Hub, settings
) -> None:
    files = sorted(_sessions(machine), key=lambda p: p.stat().st_size)
    settings.HUB_MAX_FILE = files[-1].stat().st_size - 1  # the biggest is over the limit
    report = push(alice)
    assert len(report.problems) == 1 and str(files[-1]) in report.problems[0]
    assert "at most" in report.problems[0]
    for local in files[:-1]:
        assert _hub_file("alice@laptop", local).read_bytes() == local.read_bytes()
    assert not _hub_file("alice@laptop", files[-1]).exists()
