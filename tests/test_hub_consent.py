"""Who may send a session to someone's machine: a fork made on the hub by the namespace's
owner comes back to their machine; one a teammate made stays on the hub until the owner
accepts it. And a pull is bounded (files and bytes) and says what it will write first.

The hub is this test's live server; forks are made through its API, as a teammate with
a write token would; the machine pulls with `pull_sessions` over HTTP.
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import ApiToken, AuditEntry, HubFork, Session
from sessions_app.services.hub.client import Hub, HubError, Login, login_save
from sessions_app.services.hub.pushing import push

from .test_hub import _sessions, _user, machine  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

NS = "alice@laptop"


@pytest.fixture
def hub(live_server) -> dict[str, str]:
    """The hub's address and tokens: alice pushes from her laptop; bob may write on the
    hub (fork what he reads) but pushes nothing."""
    alice = _user("alice", "push_sessions", "write_sessions")
    bob = _user("bob", "write_sessions")
    _, alice_key = ApiToken.issue(name="laptop", user=alice)
    _, bob_key = ApiToken.issue(name="bob's script", user=bob)
    return {"url": live_server.url, "alice": alice_key, "bob": bob_key}


def _fork(hub: dict[str, str], who: str, session_id: str, turn: int = 1) -> str:
    """Fork alice's pushed session on the hub through the API, with `who`'s token."""
    request = urllib.request.Request(
        f"{hub['url']}/api/sessions/{NS}/{session_id}/fork",
        data=json.dumps({"turn": turn}).encode(),
        headers={"Authorization": f"Bearer {hub[who]}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 201
        return str(json.loads(answer.read())["session_id"])


def _pushed(machine: Path, hub: dict[str, str]) -> tuple[Hub, str]:  # noqa: F811
    alice = Hub(Login(hub["url"], NS, hub["alice"]))
    login_save(alice.login)
    push(alice)
    return alice, _sessions(machine)[0].stem


def _pull(*args: str) -> tuple[str, str, CommandError | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("pull_sessions", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def _here(machine: Path) -> set[str]:  # noqa: F811
    return {p.stem for p in _sessions(machine)}


def test_forks_another_user_made_are_never_written_on_the_owners_machine(
    machine: Path,  # noqa: F811
    hub: dict[str, str],
) -> None:
    alice, source = _pushed(machine, hub)
    before = _here(machine)
    made = [_fork(hub, "bob", source) for _ in range(3)]
    assert all(HubFork.objects.get(session__session_id=m).made_by.username == "bob" for m in made)
    out, err, refused = _pull()
    assert refused is None, err
    assert _here(machine) == before, "a teammate's fork was written on alice's machine"
    assert out.count("held on the hub:") == 3 and "made by bob" in out
    assert f"pull_sessions --accept {made[0]}" in out
    assert "0 pulled" in out and "3 held on the hub" in out
    answer = alice.json("GET", "pulls")
    assert answer["files"] == [] and len(answer["held"]) == 3
    # The machine cannot take one anyway, nor say it holds one.
    path = answer["held"][0]["path"]
    with pytest.raises(HubError) as fetched:
        list(alice.stream("file", {"path": path}))
    assert fetched.value.status == 403 and "accept" in str(fetched.value)
    with pytest.raises(HubError):
        alice.json("POST", "pulled", {"path": path, "size": 1}, body=b"")


def test_the_owners_own_fork_comes_back_as_before(
    machine: Path,  # noqa: F811
    hub: dict[str, str],
) -> None:
    _, source = _pushed(machine, hub)
    mine = _fork(hub, "alice", source)
    out, err, refused = _pull()
    assert refused is None, err
    assert mine in _here(machine)
    assert Session.objects.get(namespace="", session_id=mine)
    assert "1 pulled" in out and "0 held" in out


def test_the_owner_accepts_one_fork_and_only_that_one_comes(
    machine: Path,  # noqa: F811
    hub: dict[str, str],
) -> None:
    _, source = _pushed(machine, hub)
    first, second = _fork(hub, "bob", source), _fork(hub, "bob", source, turn=2)
    out, err, refused = _pull("--accept", first)
    assert refused is None, err
    assert first in _here(machine) and second not in _here(machine)
    assert f"accepted: {first}" in out and "1 pulled" in out and "1 held" in out
    assert AuditEntry.objects.filter(action="pull-accepted", detail__contains=first).exists()
    out, _, _ = _pull()  # taken once: not offered again
    assert "0 pulled" in out and second not in _here(machine)


def test_nobody_but_the_owner_accepts_a_fork_for_their_machine(
    machine: Path,  # noqa: F811
    hub: dict[str, str],
) -> None:
    _, source = _pushed(machine, hub)
    made = _fork(hub, "bob", source)
    bob = Hub(Login(hub["url"], NS, hub["bob"]))
    with pytest.raises(HubError) as refused:
        bob.json("POST", "accept", {"session": made}, body=b"")
    assert refused.value.status == 403
    assert HubFork.objects.get(session__session_id=made).accepted_at is None


def test_a_pull_is_bounded_and_lists_what_it_will_write_before_writing(
    machine: Path,  # noqa: F811
    hub: dict[str, str],
    settings,
) -> None:
    _, source = _pushed(machine, hub)
    made = [_fork(hub, "alice", source) for _ in range(3)]
    settings.PULL_MAX_FILES = 2
    out, err, refused = _pull("--dry-run")
    assert refused is None, err
    assert out.count("would pull:") == 2 and "nothing written" in out
    assert "BRANCHBOARD_PULL_MAX_FILES" in out
    assert not set(made) & _here(machine), "a dry run wrote"
    out, err, refused = _pull()
    assert refused is None, err
    assert len(set(made) & _here(machine)) == 2
    lines = out.splitlines()
    planned = [i for i, line in enumerate(lines) if line.startswith("will pull:")]
    written = [i for i, line in enumerate(lines) if line.startswith("pulled:")]
    assert len(planned) == 2 and len(written) == 2 and max(planned) < min(written)
    assert "1 left for the next pull" in out
    out, _, _ = _pull()
    assert set(made) <= _here(machine), "the next pull takes the rest"


def test_a_pull_writes_at_most_its_bytes(
    machine: Path,  # noqa: F811
    hub: dict[str, str],
    settings,
) -> None:
    _, source = _pushed(machine, hub)
    made = _fork(hub, "alice", source)
    size = Path(Session.objects.get(namespace=NS, session_id=made).path).stat().st_size
    settings.PULL_MAX_BYTES = size - 1
    out, err, refused = _pull()
    assert refused is None, err
    assert made not in _here(machine)
    assert "BRANCHBOARD_PULL_MAX_BYTES" in out and "next pull" in out
    settings.PULL_MAX_BYTES = size
    _pull()
    assert made in _here(machine)


def test_forks_made_before_the_record_take_their_maker_from_the_audit(transactional_db) -> None:
    """Migration 0038: a fork the hub made before it knew its maker gets the user of the
    audit entry that names it; one no entry names stays on the hub until accepted."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("sessions_app", "0037_search_text_namespace")]
    after = [("sessions_app", "0038_hub_fork_made_by")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    user = old.get_model("auth", "User").objects.create(username="alice")
    project = old.get_model("sessions_app", "Project").objects.create(
        agent="claude", folder="/hub/alice@laptop/p", root="/hub", namespace=NS
    )
    sessions = old.get_model("sessions_app", "Session")
    made, unknown = (
        sessions.objects.create(
            project=project, namespace=NS, session_id=key, path=f"/hub/alice@laptop/p/{key}.jsonl"
        )
        for key in (
            "a" * 8 + "-0000-4000-8000-" + "0" * 12,
            "b" * 8 + "-0000-4000-8000-" + "0" * 12,
        )
    )
    old.get_model("sessions_app", "AuditEntry").objects.create(
        user=user, actor="alice", via="api", action="fork", result_session_id=made.session_id
    )
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        forks = executor.loader.project_state(after).apps.get_model("sessions_app", "HubFork")
        assert forks.objects.get(session_id=made.pk).made_by_id == user.pk
        assert not forks.objects.filter(session_id=unknown.pk).exists()
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
