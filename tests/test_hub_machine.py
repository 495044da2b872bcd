"""A stateful property test of the team hub: whatever a machine does, the hub stays true.

A laptop's home (Claude, Qwen, Codex and Gemini sessions of the fixtures) pushes to a hub that is
this test's live server, over HTTP. Random sequences of: a CLI appending lines (sometimes
a half-written last line, completed later), rewind, undo and fork on the laptop,
a session file deleted there, a push, a push cut off after a few chunks (before a
request, or after it with the answer lost), a hub restart (its files and database
kept, the rest dropped; a staging file may have lost its tail), a fork made on the
hub (by alice, the laptop's owner, or by bob, a teammate) and a pull of it back to the
laptop, alice accepting one of bob's forks; a push racing a manual push that starts a
file over (two threads, two connections); hostile requests (a namespace ending in a
line break, a name the disk cannot hold, a path below a file, a chunk at an offset
the hub holds nothing of, another spelling of a path), each refused with nothing
written, or answered as its one spelling.

And another user's desktop (a second namespace, his own token) pushing files that reuse
the laptop's ids: a subagent transcript under one of its session ids, and a copy of one
of its sessions under the same id, with the same record uuids and message ids but his
words and huge token counts.

After every push: the hub holds each of the laptop's files byte for byte (but those of a
project BRANCHBOARD_HUB_EXCLUDE names), and for a deleted one the version it last held
before the deletion; after a push cut off, each file on the hub is the version it held or
a start of the laptop's file. After the other user's push: what each of the laptop's
sessions shows (its subagents, its Markdown export) and costs is what it was. Always: the
hub's index of the namespace equals a fresh import of the hub's folder (records, turns,
active leaf, each turn's prompt, every row's offset), no file of the excluded project (nor
one made from it) is on the hub, and nothing of the namespace is keyed to the other's (a
subagent, a parent, a search text, the first count of a message); a fork bob made is never
on the laptop unless alice accepted it.

    BRANCHBOARD_PROPERTY_EXAMPLES=100 BRANCHBOARD_PROPERTY_STEPS=20 \
        .venv/bin/python -m pytest tests/test_hub_machine.py -p no:randomly -q
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import override_settings
from hypothesis import HealthCheck
from hypothesis import settings as run_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sessions_app import selectors
from sessions_app.models import (
    ApiToken,
    AuditEntry,
    HubFile,
    HubNamespace,
    Project,
    SearchText,
    Session,
    SkippedFile,
    Usage,
)
from sessions_app.pages.exports import markdown_chunks
from sessions_app.selectors.usage.sessions import session_usage, session_usage_parts
from sessions_app.services.audit import API, Actor
from sessions_app.services.branching import (
    BranchError,
    session_fork,
    session_rewind,
    session_rewind_undo,
)
from sessions_app.services.branching.inputs import fork_input
from sessions_app.services.hub.client import Hub, HubError, Login
from sessions_app.services.hub.namespaces import hub_path_normal, hub_roots, namespace_folder
from sessions_app.services.hub.pulling import pull, pull_plan
from sessions_app.services.hub.pushing import push
from sessions_app.services.importing import sessions_import
from sessions_app.services.worktrees import fork_where_asked

from .corpus import FIXTURES
from .index_check import fresh_import_facts, index_facts
from .test_hub import _user
from .test_trust_machine import cli_append

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.django_db(transaction=True)

NS = "alice@laptop"
OTHER = "bob@desktop"  # another user's machine, pushing files that reuse the laptop's ids
WORDS = "BOBPUSHEDWORDS"
# (fixture path, path under the laptop's home)
SESSIONS = [
    (
        "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl",
        ".claude/projects/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl",
    ),
    (
        "public/claude/-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl",
        ".claude/projects/-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl",
    ),
    (
        "cli/qwen/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl",
        ".qwen/projects/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl",
    ),
    (
        "synthetic/qwen/-home-dev-code-btwdemo/chats/5b0c1d2e-3f40-4a51-8b62-7c8d9e0fa1b2.jsonl",
        ".qwen/projects/-home-dev-code-btwdemo/chats/5b0c1d2e-3f40-4a51-8b62-7c8d9e0fa1b2.jsonl",
    ),
    (
        "cli/codex/sessions/2026/11/26/"
        "rollout-2026-11-26T10-22-20-01a21760-a9c0-7191-881d-5cbb883febdf.jsonl",
        ".codex/sessions/2026/11/26/"
        "rollout-2026-11-26T10-22-20-01a21760-a9c0-7191-881d-5cbb883febdf.jsonl",
    ),
    (
        "gemini/tmp/demo-app/chats/session-2026-11-20T10-00-1a2b3c4d.jsonl",
        ".gemini/tmp/demo-app/chats/session-2026-11-20T10-00-1a2b3c4d.jsonl",
    ),
    # Its project: with a project excluded, a chat whose project is unknown stays home.
    ("gemini/tmp/demo-app/.project_root", ".gemini/tmp/demo-app/.project_root"),
]
ROOTS = [".claude/projects", ".qwen/projects", ".codex/sessions", ".gemini/tmp"]
# A project BRANCHBOARD_HUB_EXCLUDE names, with a file of each agent and shape (paths under
# tests/fixtures/hub_projects, the laptop's home alike): a Claude Code session, a Gemini CLI
# chat and document (their project only in `.project_root`), a Codex rollout of August 2025
# (its cwd only in `<environment_context>`). Each holds the project's folder in its bytes,
# and so does every file made from one (a fork, a rewind's backup): no file on the hub may.
EXCLUDED = "/home/me/code/client"
EXCLUDED_FILES = [
    ".claude/projects/-home-me-code-client/1c000001-0000-4000-8000-000000000001.jsonl",
    ".gemini/tmp/client/.project_root",
    ".gemini/tmp/client/chats/session-2026-03-04T10-00-2a000001.jsonl",
    ".gemini/tmp/client/chats/session-2025-10-30T09-00-2a000002.json",
    ".codex/sessions/2025/08/28/"
    "rollout-2025-08-28T12-05-24-3c000001-0000-4000-8000-000000000001.jsonl",
]
EXAMPLES = int(os.environ.get("BRANCHBOARD_PROPERTY_EXAMPLES", "5"))
STEPS = int(os.environ.get("BRANCHBOARD_PROPERTY_STEPS", "12"))
# Small chunks, so that a fixture session goes in several and a push can stop between them.
CHUNK = 48 << 10


def _theirs(raw: bytes) -> bytes:
    """A file's lines as another user rewrote them: every id kept (uuids, message ids,
    session ids), every text his words, every token count a hundred million."""

    def rewritten(value: object, key: str = "") -> object:
        if isinstance(value, dict):
            return {k: rewritten(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [rewritten(v, key) for v in value]
        if isinstance(value, str) and key in ("text", "content", "display"):
            return f"{WORDS} {len(value)}"
        if isinstance(value, int) and not isinstance(value, bool) and "token" in key.lower():
            return 100_000_000
        return value

    out = []
    for line in raw.splitlines():
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a half-written line
        out.append(orjson.dumps(rewritten(data)) + b"\n")
    return b"".join(out)


class Cut(HubError):
    """The connection dropped (the test's own)."""


class CutHub(Hub):
    """A connection to the hub that drops at the `after`-th chunk or commit: before it is
    sent, or once the hub has taken it but before its answer comes back."""

    def __init__(self, login: Login, after: int, answer_lost: bool) -> None:
        super().__init__(login)
        self.left = after
        self.answer_lost = answer_lost

    def call(self, method: str, endpoint: str, *args, **kw) -> bytes:
        if endpoint in ("chunk", "commit"):
            if self.left == 0:
                if self.answer_lost:
                    super().call(method, endpoint, *args, **kw)
                raise Cut("the connection dropped")
            self.left -= 1
        return super().call(method, endpoint, *args, **kw)


def _close(hub: Hub) -> None:
    """Let go of the hub's connection, if the client keeps one."""
    close = getattr(hub, "close", None)
    if close is not None:
        close()


class HubAndLaptop(RuleBasedStateMachine):
    """The laptop's home, the hub's folder, and what the hub should hold of each file."""

    home: Path
    other_home: Path
    data: Path
    url: str
    token: str
    other_token: str
    other_pushes = 0  # the other user's pushes that ran, over the whole test (reported)

    @initialize(pushed=st.booleans())
    def start(self, pushed: bool) -> None:
        """A laptop with a few sessions; with `pushed`, it pushed them all once already."""
        Session.objects.all().delete()
        Project.objects.all().delete()
        HubNamespace.objects.all().delete()
        SkippedFile.objects.all().delete()
        AuditEntry.objects.all().delete()
        for folder in (self.home, self.other_home, self.data):
            shutil.rmtree(folder, ignore_errors=True)
        self.data.mkdir(mode=0o700)
        for fixture, inside in SESSIONS:
            target = self.home / inside
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIXTURES / fixture, target)
        for inside in EXCLUDED_FILES:
            target = self.home / inside
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIXTURES / "hub_projects" / inside, target)
        self.hub = Hub(Login(self.url, NS, self.token))
        # What the hub holds of each file (by its path under the home), as far as the
        # test knows: after a push, the laptop's bytes; a deleted file's stays as it was.
        self.held: dict[str, bytes] = {}
        self.deleted: set[str] = set()
        self.half: dict[str, bytes] = {}  # a file's half-written last line: what is left
        # A rewound file's bytes before its rewind, and the files the rewind made (the
        # backup its undo reads back): by the rewound file's path.
        self.before_rewind: dict[str, tuple[bytes, set[str]]] = {}
        self.unpulled = 0  # forks made on the hub since the last pull
        # Forks bob made that alice has not accepted: their paths under the home, by id.
        self.not_accepted: dict[str, str] = {}
        # Files in the order the test first met them: a pick names the same file when
        # Hypothesis replays the steps, though new files' names are random.
        self.met: dict[str, int] = {}
        if pushed:
            self.push_all(cut=None)

    def teardown(self) -> None:
        if hasattr(self, "hub"):
            _close(self.hub)
        connections.close_all()

    # The laptop

    def _laptop_files(self) -> dict[str, bytes]:
        out = {}
        for root in ROOTS:
            for path in sorted((self.home / root).rglob("*.jsonl")):
                out[path.relative_to(self.home).as_posix()] = path.read_bytes()
        return out

    def _pushable(self) -> dict[str, bytes]:
        """The laptop's files of the projects that may go (not the excluded one's)."""
        return {k: v for k, v in self._laptop_files().items() if EXCLUDED.encode() not in v}

    def _in_order(self, names: list[str]) -> list[str]:
        """`names` in the order the test first met them (new ones by name, at the end)."""
        for name in sorted(set(names) - self.met.keys()):
            self.met[name] = len(self.met)
        return sorted(names, key=self.met.__getitem__)

    def _laptop_session(self, pick: int) -> Session | None:
        """One of the laptop's sessions, its index brought up to date first (as its
        watcher does); None when a CLI is half-way through writing its line."""
        sessions_import(roots=[self.home / root for root in ROOTS])
        listed = {s.path: s for s in Session.objects.listed().filter(namespace="")}
        paths = self._in_order([p for p in listed if Path(p).exists()])
        if not paths:
            return None
        session = listed[paths[pick % len(paths)]]
        if self._inside(session) in self.half:
            return None
        return session

    def _inside(self, session: Session) -> str:
        return Path(session.path).relative_to(self.home).as_posix()

    def _refusable(self, action):
        files = self._laptop_files()
        try:
            return action()
        except BranchError:
            assert self._laptop_files() == files, "a refused action changed a file"
            return None

    @rule(pick=st.integers(0, 100), half=st.booleans(), cut=st.floats(0.05, 0.95))
    def cli_appends(self, pick: int, half: bool, cut: float) -> None:
        """A CLI writes a turn's lines; with `half`, its last line only partly so far."""
        files = self._in_order(list(self._laptop_files()))
        inside = files[pick % len(files)]
        path = self.home / inside
        if inside in self.half:
            with path.open("ab") as f:
                f.write(self.half.pop(inside))
            return
        before = path.read_bytes()
        cli_append(path)
        added = path.read_bytes()[len(before) :]
        if half and added:
            lines = added.splitlines(keepends=True)
            last = lines[-1]
            at = max(1, int(len(last) * cut))
            with path.open("r+b") as f:
                f.truncate(len(before) + len(added) - len(last) + at)
            self.half[inside] = last[at:]
        self.before_rewind.pop(inside, None)

    @rule(pick=st.integers(0, 100), turn=st.integers(1, 6))
    def rewind(self, pick: int, turn: int) -> None:
        session = self._laptop_session(pick)
        if session is None:
            return
        before = Path(session.path).read_bytes()
        files = set(self._laptop_files())
        done = self._refusable(lambda: session_rewind(session=session, turn=turn))
        if done is not None:
            after = self._laptop_files()
            made = {inside: after[inside] for inside in set(after) - files}
            self.before_rewind[self._inside(session)] = (before, made)

    @precondition(lambda self: self.before_rewind)
    @rule(pick=st.integers(0, 100))
    def undo(self, pick: int) -> None:
        """Undo a rewind made on the laptop (its file untouched since). Refused when the
        files the rewind made (its backup) were changed or deleted since, but nothing lost."""
        inside = self._in_order(list(self.before_rewind))[pick % len(self.before_rewind)]
        expected, made = self.before_rewind.pop(inside)
        now = self._laptop_files()
        intact = all(now.get(name) == raw for name, raw in made.items())
        sessions_import(roots=[self.home / root for root in ROOTS])
        session = Session.objects.get(namespace="", path=str(self.home / inside))
        done = self._refusable(lambda: session_rewind_undo(session=session))
        # Qwen's undo appends a line; these give the old bytes back (Gemini: its line taken back).
        if session.agent in ("claude", "codex", "gemini"):
            assert done is not None or not intact, "the undo of an untouched rewind was refused"
            if done is not None:
                assert Path(session.path).read_bytes() == expected, "undo did not restore bytes"

    @rule(pick=st.integers(0, 100), turn=st.none() | st.integers(1, 6), include=st.booleans())
    def fork(self, pick: int, turn: int | None, include: bool) -> None:
        session = self._laptop_session(pick)
        if session is None:
            return
        new = self._refusable(
            lambda: session_fork(session=session, turn=turn, include_turn=include)
        )
        if new is not None:
            assert Path(new.path).is_relative_to(self.home), "a laptop's fork left its home"

    @rule(pick=st.integers(0, 100))
    def delete_file(self, pick: int) -> None:
        """A CLI's cleanup deletes a session file: the hub keeps what it had."""
        files = self._in_order(list(self._laptop_files()))
        if len(files) <= 1:
            return
        inside = files[pick % len(files)]
        (self.home / inside).unlink()
        self.deleted.add(inside)
        self.half.pop(inside, None)
        self.before_rewind.pop(inside, None)

    # The wire

    @rule(cut=st.none() | st.tuples(st.integers(0, 4), st.booleans()))
    def push_all(self, cut: tuple[int, bool] | None) -> None:
        """A push; with `cut` (n, answer lost), its connection drops at the n-th chunk or
        commit: before it is sent, or once the hub took it but before its answer came."""
        if cut is not None:
            return self._push_cut_off(*cut)
        report = push(self.hub)
        assert report.problems == [], report.problems
        laptop = self._pushable()
        for inside, raw in laptop.items():
            assert self._hub_bytes(inside) == raw, f"{inside}: the hub's bytes differ"
            self.held[inside] = raw
        assert push(self.hub).sent_files == [], "a repeated push sent something"
        self._check_deleted()

    def _push_cut_off(self, after: int, answer_lost: bool) -> None:
        laptop = self._laptop_files()
        hub = CutHub(self.hub.login, after, answer_lost)
        try:
            push(hub)
        except Cut:
            pass
        finally:
            _close(hub)
        for inside, raw in laptop.items():
            now = self._hub_bytes(inside)
            if now is None:
                assert inside not in self.held, f"{inside}: gone from the hub"
                continue
            assert now == self.held.get(inside) or raw.startswith(now), (
                f"{inside}: the hub holds neither what it had nor a start of the file"
            )
            self.held[inside] = now
        self._check_deleted()

    @rule(tear=st.none() | st.floats(0.0, 0.99))
    def hub_restarts(self, tear: float | None) -> None:
        """The hub stops and starts again: its files and its database stay, the rest goes.
        With `tear`, a staging file lost its tail (written but never synced)."""
        if tear is not None:
            found = {str(p): p for p in namespace_folder(NS).rglob(".*.push")}
            for name in self._in_order(list(found)):
                staging = found[name]
                size = staging.stat().st_size
                with staging.open("r+b") as f:
                    f.truncate(int(size * tear))
                break
        connections.close_all()
        _close(self.hub)
        self.hub = Hub(Login(self.url, NS, self.token))
        sessions_import(roots=hub_roots())  # its import pass at start
        self._check_deleted()

    @rule(
        pick=st.integers(0, 100),
        turn=st.none() | st.integers(1, 6),
        include=st.booleans(),
        by=st.sampled_from(["alice", "bob"]),
    )
    def hub_fork(self, pick: int, turn: int | None, include: bool, by: str) -> None:
        """Someone forks one of the laptop's sessions on the hub: alice, its owner, or bob,
        a teammate (through the doors' path, which records who made it)."""
        pushed = {s.path: s for s in Session.objects.listed().filter(namespace=NS)}
        if not pushed:
            return
        paths = self._in_order(list(pushed))
        source = pushed[paths[pick % len(paths)]]
        before = self._hub_files()
        user = User.objects.get(username=by)
        try:
            asked = fork_input(turn=turn, include_turn=include)
            forked = fork_where_asked(session=source, asked=asked, worktree=None)
        except BranchError:
            assert self._hub_files() == before, "a refused fork changed a file on the hub"
            return
        forked.audit(Actor(by, API, user=user), source=source, turn=turn)
        new = forked.session
        if by != "alice":
            inside = Path(new.path).relative_to(namespace_folder(NS)).as_posix()
            self.not_accepted[str(new.session_id)] = inside
        self.unpulled += 1
        assert new.namespace == NS
        assert Path(new.path).is_relative_to(namespace_folder(NS))

    @precondition(lambda self: self.unpulled)
    @rule()
    def pull_back(self) -> None:
        self.unpulled = 0
        report = pull(self.hub)
        assert report.problems == [], report.problems
        for written in report.written:
            inside = written.relative_to(self.home).as_posix()
            assert written.read_bytes() == self._hub_bytes(inside)
            self.held[inside] = written.read_bytes()
        assert self.hub.json("GET", "pulls")["files"] == [], "a pulled file is offered again"

    @precondition(lambda self: self.not_accepted)
    @rule(pick=st.integers(0, 100))
    def accept(self, pick: int) -> None:
        """Alice lets one of bob's forks come to her laptop; it comes with that pull."""
        session_id = sorted(self.not_accepted)[pick % len(self.not_accepted)]
        inside = self.not_accepted.pop(session_id)
        report = pull(self.hub, pull_plan(self.hub, accept=[session_id]))
        assert report.problems == [], report.problems
        assert self.home / inside in report.written, "an accepted fork stayed away"
        for written in report.written:
            self.held[written.relative_to(self.home).as_posix()] = written.read_bytes()

    @precondition(lambda self: hasattr(self, "hub"))
    @invariant()
    def no_fork_comes_without_its_owners_consent(self) -> None:
        came = {i for i in self.not_accepted.values() if os.path.lexists(self.home / i)}
        assert not came, f"a fork bob made was written on alice's laptop: {came}"

    @rule(pick=st.integers(0, 100))
    def push_races_a_start_over(self, pick: int) -> None:
        """The `--watch` service pushes while a manual push starts one file over (a chunk
        at offset 0, on a connection of its own, in another thread): the live file is
        never written through a staging handle, and the next push brings all up to date."""
        laptop = self._pushable()
        inside = self._in_order(list(laptop))[pick % len(laptop)]
        raw = laptop[inside]
        first = raw[: raw.find(b"\n") + 1] or raw
        other = Hub(Login(self.url, NS, self.token))
        params = {
            "path": inside,
            "offset": 0,
            "length": len(first),
            "sha256": hashlib.sha256(first).hexdigest(),
            "staged": "1",
        }

        def start_over() -> None:
            try:
                other.call(
                    "POST",
                    "chunk",
                    params,
                    body=zstd.compress(first),
                    content_type="application/zstd",
                )
            except HubError as exc:
                assert exc.status == 409, exc  # a commit took its staging file meanwhile
            finally:
                _close(other)

        racing = threading.Thread(target=start_over)
        racing.start()
        try:
            push(self.hub)  # may be refused for that file: its staging file started over
        finally:
            racing.join(timeout=60)
        for name, now_raw in laptop.items():
            now = self._hub_bytes(name)
            if now is None:
                assert name not in self.held, f"{name}: gone from the hub"
                continue
            assert now == self.held.get(name) or now_raw.startswith(now), (
                f"{name}: the hub holds neither what it had nor a start of the file"
            )
        self.push_all(cut=None)

    @rule(
        kind=st.sampled_from(["namespace", "long name", "below a file", "offset", "spelling"]),
        pick=st.integers(0, 100),
    )
    def hostile_request(self, kind: str, pick: int) -> None:
        """A request no honest push makes: refused with a 4xx, nothing written; another
        spelling of a path is answered as the path and recorded as it."""
        base = namespace_folder(NS)
        before = (
            {p: p.read_bytes() for p in base.rglob("*") if p.is_file()} if base.exists() else {}
        )
        records = sorted(HubFile.objects.values_list("path", "size"))
        laptop = self._in_order(list(self._laptop_files()))
        inside = laptop[pick % len(laptop)]
        namespace, params = NS, {"path": inside, "offset": 0, "staged": "1"}
        data = b'{"type":"user"}\n'
        endpoint = "chunk"
        if kind == "namespace":
            namespace = NS + "\n"
        elif kind == "long name":
            params["path"] = f"{inside.rsplit('/', 1)[0]}/{'x' * 244}.jsonl"
        elif kind == "below a file":
            held = self._in_order(list(self.held))
            if not held:
                return
            params = {"path": f"{held[pick % len(held)]}/y.jsonl", "size": 1, "sha256": "0"}
            endpoint = "commit"
        elif kind == "offset":
            params["path"] = f"{inside.rsplit('/', 1)[0]}/hostile/{inside.rsplit('/', 1)[1]}"
            params["offset"] = 5
        else:
            root, rest = next((r, inside[len(r) + 1 :]) for r in ROOTS if inside.startswith(r))
            asked = [f"{root}//{rest.replace('/', '//')}/", inside]
            answer = self.hub.json("POST", "state", body=orjson.dumps({"paths": asked}))["files"]
            assert answer.get(asked[0]) == answer.get(inside), "two spellings, two answers"
            assert sorted(HubFile.objects.values_list("path", "size")) == records
            return
        if endpoint == "chunk":
            params.update(length=len(data), sha256=hashlib.sha256(data).hexdigest())
        hostile = Hub(Login(self.url, namespace, self.token))
        try:
            with pytest.raises(HubError) as refused:
                hostile.call(
                    "POST",
                    endpoint,
                    params,
                    body=zstd.compress(data),
                    content_type="application/zstd",
                )
        finally:
            _close(hostile)
        assert 400 <= refused.value.status < 500, refused.value
        after = {p: p.read_bytes() for p in base.rglob("*") if p.is_file()} if base.exists() else {}
        assert after == before, f"a refused {kind} request changed the hub's files"
        assert sorted(HubFile.objects.values_list("path", "size")) == records

    # Another user

    @rule(pick=st.integers(0, 100), agent_pick=st.integers(0, 100))
    def other_user_pushes_under_its_ids(self, pick: int, agent_pick: int) -> None:
        """Bob pushes a copy of one of the laptop's sessions under its id (its uuids and
        message ids, his words and token counts), and for a Claude Code session a subagent
        transcript under its id (one of its subagents' agent ids when it has some): what
        the laptop's sessions show and cost is what it was."""
        pushed = {s.path: s for s in Session.objects.listed().filter(namespace=NS)}
        if not pushed:
            return
        source = pushed[self._in_order(list(pushed))[pick % len(pushed)]]
        raw = Path(source.path).read_bytes()
        files = {Path(source.path).relative_to(namespace_folder(NS)).as_posix(): _theirs(raw)}
        if source.agent == "claude":
            agents = sorted(selectors.subagents_of(source))
            agent = agents[agent_pick % len(agents)] if agents else f"a{agent_pick:016x}"
            inside = f".claude/projects/-home-bob-elsewhere/{source.session_id}/subagents"
            files[f"{inside}/agent-{agent}.jsonl"] = _theirs(raw)
        for inside, data in files.items():
            (self.other_home / inside).parent.mkdir(parents=True, exist_ok=True)
            (self.other_home / inside).write_bytes(data)
            if inside.startswith(".gemini/tmp/"):
                # Gemini CLI names a chat's project by its folder's marker: without it the
                # project is unknown and, while a project rule is set, the file stays home.
                marker = f".gemini/tmp/{inside.split('/')[2]}/.project_root"
                if (self.home / marker).is_file():
                    (self.other_home / marker).write_bytes((self.home / marker).read_bytes())
        before = self._namespace_view()
        home = os.environ["HOME"]
        os.environ["HOME"] = str(self.other_home)
        hub = Hub(Login(self.url, OTHER, self.other_token))
        try:
            with override_settings(SESSION_ROOTS=[self.other_home / root for root in ROOTS]):
                report = push(hub)
        finally:
            os.environ["HOME"] = home
            _close(hub)
        assert report.problems == [], report.problems
        HubAndLaptop.other_pushes += 1
        theirs = namespace_folder(OTHER)
        for inside, data in files.items():
            assert (theirs / inside).read_bytes() == data, f"{inside}: bob's push not held"
        assert self._namespace_view() == before, "bob's push changed the laptop's sessions"

    def _namespace_view(self) -> dict[str, tuple]:
        """What each of the laptop's sessions on the hub shows and costs: its subagents, its
        Markdown export, its usage in total, per model and per part."""
        view = {}
        for session in Session.objects.listed().filter(namespace=NS).order_by("path"):
            total, per_model = session_usage(session)
            subs = selectors.subagents_of(session)
            view[session.path] = (
                sorted((agent, sub.path, sub.record_count) for agent, sub in subs.items()),
                (total.tokens, total.cost, total.messages),
                sorted((model, t.tokens, t.cost) for model, t in per_model.items()),
                [(p.part, p.turn, p.totals.tokens) for p in session_usage_parts(session)],
                "".join(markdown_chunks(session)),
            )
        return view

    # What stays true

    def _hub_bytes(self, inside: str) -> bytes | None:
        path = namespace_folder(NS) / inside
        return path.read_bytes() if path.exists() else None

    def _hub_files(self) -> dict[str, bytes]:
        base = namespace_folder(NS)
        return {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*.jsonl")}

    def _check_deleted(self) -> None:
        for inside in self.deleted:
            assert self._hub_bytes(inside) == self.held.get(inside), (
                f"{inside}: deleted on the laptop, the hub no longer holds its last version"
            )

    @precondition(lambda self: hasattr(self, "hub"))
    @invariant()
    def no_file_of_the_excluded_project_reaches_the_hub(self) -> None:
        base = namespace_folder(NS)
        held = [p for p in base.rglob("*") if p.is_file()] if base.exists() else []
        leaked = [p for p in held if EXCLUDED.encode() in p.read_bytes()]
        assert leaked == [], f"an excluded project's files on the hub: {leaked}"

    @precondition(lambda self: hasattr(self, "hub"))
    @invariant()
    def namespace_keeps_to_itself(self) -> None:
        """Nothing of the laptop's namespace is keyed to another's: its sessions' subagents
        and parents, its records' search texts, and the one count of each of its messages."""
        mine = Session.objects.filter(namespace=NS)
        for session in mine.filter(is_subagent=False):
            for sub in selectors.subagents_of(session).values():
                assert sub.namespace == NS, f"{sub.path} shown as a subagent of {session.ref}"
        assert not mine.filter(parent__isnull=False).exclude(parent__namespace=NS).exists()
        assert not mine.filter(parent__is_subagent=True).exists(), "a subagent taken for a parent"
        texts = SearchText.objects.filter(record__session__namespace=NS)
        assert not texts.exclude(namespace=NS).exists(), "a record linked to another's text"
        assert not texts.filter(text__contains=WORDS).exists(), "bob's words in the laptop's"
        usage = Usage.objects.filter(session__namespace=NS)
        counted = set(usage.filter(copy=False).values_list("key", flat=True))
        assert set(usage.values_list("key", flat=True)) <= counted, "a message counted nowhere"

    @precondition(lambda self: hasattr(self, "hub"))
    @invariant()
    def hub_index_is_a_fresh_import(self) -> None:
        hub = str(namespace_folder(NS).parent) + os.sep
        index = {p: f for p, f in index_facts().items() if p.startswith(hub)}
        for namespace in (NS, OTHER):
            base = str(namespace_folder(namespace)) + os.sep
            named = Session.objects.filter(namespace=namespace).values_list("path", flat=True)
            held = {p for p in index if p.startswith(base)}
            assert set(named) == held, f"a session of {namespace} outside its folder"
        for path in HubFile.objects.values_list("path", flat=True):
            assert hub_path_normal(path) == path, f"{path!r} recorded as spelled, not as one path"
        assert index == fresh_import_facts(hub_roots())


def test_any_sequence_of_pushes_keeps_the_hub_true(
    live_server, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user("alice", "push_sessions")
    _, key = ApiToken.issue(name="laptop", user=user)
    # A teammate who forks on the hub, and pushes from a machine of his own.
    bob = _user("bob", "write_sessions", "push_sessions")
    _, other_key = ApiToken.issue(name="desktop", user=bob)
    home = Path(tempfile.mkdtemp(prefix="laptop-", dir=tmp_path))
    monkeypatch.setenv("HOME", str(home))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("BRANCHBOARD_HUB_PUSH_CHUNK", str(CHUNK))
    settings.SESSION_ROOTS = [home / root for root in ROOTS]
    settings.DATA_DIR = tmp_path / "data"
    settings.HUB_PROJECTS = ["*"]
    settings.HUB_EXCLUDE = [EXCLUDED]
    HubAndLaptop.home = home
    HubAndLaptop.other_home = Path(tempfile.mkdtemp(prefix="desktop-", dir=tmp_path))
    HubAndLaptop.other_token = other_key
    HubAndLaptop.data = settings.DATA_DIR
    HubAndLaptop.url = live_server.url
    HubAndLaptop.token = key
    # Rewinds right after an append are refused as busy by design; here they should run.
    with override_settings(BRANCHBOARD_BUSY_SECONDS=0):
        run_state_machine_as_test(
            HubAndLaptop,
            settings=run_settings(
                max_examples=EXAMPLES,
                stateful_step_count=STEPS,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    # Seen with `-rP`: how often the other user's rule pushed, so a run shows it was exercised.
    print(f"the other user pushed under the laptop's ids {HubAndLaptop.other_pushes} times")
