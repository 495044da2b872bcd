"""Reading and writing stay inside the session roots: no links, only regular files."""

from __future__ import annotations

import contextlib
import io
import os
import threading
import uuid
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from sessions_app.models import Project, Session
from sessions_app.services.importing import ImportReport, sessions_import

from . import factories
from .factories import jsonl, one_turn

pytestmark = pytest.mark.django_db

SECRET = b"TOP-SECRET-KEY-0123"
HARMLESS = b"harmless-reply-4567"  # as long as SECRET: a swapped file keeps every offset
PROMPT, REPLY = "say something", HARMLESS.decode()
DEADLINE = 10


def write_session(folder: Path, sid: str | None = None) -> Path:
    """A one-turn session whose answer is HARMLESS."""
    return factories.write_session(folder, one_turn(sid or str(uuid.uuid4()), PROMPT, REPLY))


@pytest.fixture
def root(tmp_path: Path, settings) -> Path:
    """A configured session root with nothing in it yet."""
    root = tmp_path / "root"
    root.mkdir()
    settings.SESSION_ROOTS = [root]
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every root, holding a file the server must never hand out."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret_key").write_bytes(SECRET + b"\n")
    return folder


def named(report: ImportReport, path: Path, *words: str) -> bool:
    """Whether one message of the report names `path` and says all of `words`."""
    return any(str(path) in e and all(w in e for w in words) for e in report.errors)


def test_a_linked_session_file_is_skipped_and_reported(root: Path, outside: Path) -> None:
    kept = write_session(root / "-work-demo")
    link = kept.parent / f"{uuid.uuid4()}.jsonl"
    link.symlink_to(outside / "secret_key")
    report = sessions_import(roots=[root])
    assert list(Session.objects.values_list("path", flat=True)) == [str(kept)]
    assert named(report, link, "link")


def test_a_linked_project_folder_is_skipped_and_reported(root: Path, outside: Path) -> None:
    kept = write_session(root / "-work-demo")
    write_session(outside / "-elsewhere")
    link = root / "-elsewhere"
    link.symlink_to(outside / "-elsewhere", target_is_directory=True)
    report = sessions_import(roots=[root])
    assert list(Session.objects.values_list("path", flat=True)) == [str(kept)]
    assert named(report, link, "link")


def test_a_session_file_swapped_for_a_link_is_never_served(team, root: Path, outside: Path) -> None:
    path = write_session(root / "-work-demo")
    sessions_import(roots=[root])
    sid = path.stem
    assert Session.objects.filter(session_id=sid).exists()
    secret = outside / "copy.jsonl"  # reads at the imported offsets would parse
    secret.write_bytes(path.read_bytes().replace(HARMLESS, SECRET))
    path.unlink()
    path.symlink_to(secret)

    client = Client()
    client.force_login(User.objects.create_user("reader"))
    response = client.get(f"/sessions/{sid}/export.jsonl")
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert SECRET not in body
    assert response.status_code == 404
    for url in (f"/sessions/{sid}/", f"/sessions/{sid}/export.md"):
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert SECRET not in body, url


def _import_in_thread(roots: list[Path]) -> tuple[threading.Thread, list[ImportReport]]:
    reports: list[ImportReport] = []

    def run() -> None:
        try:
            reports.append(sessions_import(roots=roots))
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, reports


def _release(fifo: Path) -> None:
    """Let a reader stuck opening `fifo` go: open it for writing, and close it."""
    with contextlib.suppress(OSError):  # no reader waiting
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.django_db(transaction=True)
def test_fifos_named_like_session_files_do_not_hang_the_import(root: Path) -> None:
    folder = root / "-work-demo"
    write_session(folder)
    fifos = [folder / "agent-x.jsonl", folder / f"{uuid.uuid4()}.jsonl"]
    for fifo in fifos:
        os.mkfifo(fifo)
    thread, reports = _import_in_thread([root])
    thread.join(DEADLINE)
    hung = thread.is_alive()
    for fifo in fifos:
        _release(fifo)  # so a hung import ends rather than outliving the test
    thread.join(DEADLINE)
    assert not hung, "the import blocked on a FIFO"
    (report,) = reports
    assert Session.objects.count() == 1
    for fifo in fifos:
        assert named(report, fifo, "not a regular file"), fifo


def test_fork_session_refuses_a_file_outside_the_roots(root: Path, tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere" / "-work-demo"
    path = write_session(folder)
    before = sorted(p.name for p in folder.parent.rglob("*"))
    with pytest.raises(CommandError) as exc:
        call_command("fork_session", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert str(root) in str(exc.value) and "BRANCHBOARD_ROOTS" in str(exc.value)
    assert sorted(p.name for p in folder.parent.rglob("*")) == before
    assert not Project.objects.exists()


def test_fork_session_refuses_a_link_inside_a_root(root: Path, outside: Path) -> None:
    target = write_session(outside / "-work-demo")
    folder = root / "-work-demo"
    folder.mkdir()
    link = folder / target.name
    link.symlink_to(target)
    with pytest.raises(CommandError) as exc:
        call_command("fork_session", str(link), stdout=io.StringIO(), stderr=io.StringIO())
    assert not Session.objects.exists()  # the target was not even read
    assert "link" in str(exc.value)
    assert sorted(p.name for p in folder.iterdir()) == [target.name]
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_fork_session_by_path_inside_a_root_uses_that_root(root: Path) -> None:
    path = write_session(root / "-work-demo")
    out = io.StringIO()
    call_command("fork_session", str(path), "--json", stdout=out)
    new = Session.objects.get(session_id=orjson.loads(out.getvalue())["session_id"])
    assert Path(new.path).parent == path.parent
    assert {p.root for p in Project.objects.all()} == {str(root)}


def test_a_linked_subagent_sidecar_is_not_read(root: Path, outside: Path) -> None:
    path = write_session(root / "-work-demo")
    subagents = path.parent / path.stem / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-a1.jsonl").write_bytes(jsonl(one_turn(path.stem, PROMPT, REPLY)))
    stolen = outside / "meta.json"
    stolen.write_bytes(orjson.dumps({"description": SECRET.decode()}))
    (subagents / "agent-a1.meta.json").symlink_to(stolen)
    sessions_import(roots=[root])
    sub = Session.objects.get(is_subagent=True)
    assert sub.agent_name == "agent-a1"  # the name a subagent without a sidecar gets
