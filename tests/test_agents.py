"""One agent interface: every agent provides it, nothing else branches on an agent,
and a third agent (tests/fake_agent.py) works end to end once registered."""

from __future__ import annotations

import dataclasses
import re
import uuid
from pathlib import Path

import orjson
import pytest

from sessions_app import formats
from sessions_app.formats import (
    AGENT_LABELS,
    AGENTS,
    CLAUDE,
    CODEX,
    GEMINI,
    LAST_RECORD,
    NEWEST_LEAF,
    QWEN,
    REGISTRY,
    REWIND,
    TITLE,
    Agent,
    agent_for,
    detect_agent_from_path,
    parse_line,
)
from sessions_app.formats.agent import LEAF_RULES
from sessions_app.models import Session
from sessions_app.resume import resume_command
from sessions_app.services.branching import session_fork, session_rewind, session_rewind_undo
from sessions_app.services.importing import sessions_import

from . import fake_agent
from .corpus import make_idle

APP = Path(__file__).resolve().parent.parent / "sessions_app"
TEMPLATES = APP.parent / "templates"

# What every agent object provides (agent.py's docstring says what each means).
DATA = (
    "name",
    "label",
    "cli",
    "home_folder",
    "sessions_subfolder",
    "subagent_files",
    "leaf_rule",
    "worktree_folder",
    "file_history_folder",
)
FUNCTIONS = (
    "parse_line",
    "message_text",
    "record_text",
    "content_blocks",
    "image_of",
    "assistant_parts",
    "tool_results",
    "title_line",
    "sessions_folder",
    "session_file",
    "project_folder_of",
    "is_session_path",
    "usage_of",
    "compaction_of",
    "context_of",
    "subagent_step",
    "subagent_prompt",
)
INTERFACE = (
    *DATA,
    *FUNCTIONS,
    "rewind_line",
    "rewind_marker",
    "rewinds_by_appending",
    "run_args",
    "resume_word",
    "legacy_roots",
    "line_chain",
    "sessions_root",
    "archive_root",
    "can_branch",
    "can_rewind",
    "prefix_fork",
    "session_id_of",
    "usage_reader",
    "home_variable",
    "home",
    "root_folders",
    "projects_root",
    "head_session_id",
    "file_prefix",
    "project_path",
    "results_in_reply",
    "replaces_by_id",
    "subagent_folders",
    "documents",
    "checkpoints",
)

EVERY_AGENT = [*REGISTRY.values(), fake_agent.AGENT]


@pytest.mark.parametrize("agent", EVERY_AGENT, ids=lambda a: a.name)
def test_every_agent_provides_the_whole_interface(agent: Agent) -> None:
    missing = [name for name in INTERFACE if not hasattr(agent, name)]
    assert not missing
    assert all(isinstance(getattr(agent, name), str) for name in DATA if name != "subagent_files")
    assert all(callable(getattr(agent, name)) for name in FUNCTIONS)
    assert isinstance(agent.subagent_files, bool) and agent.leaf_rule in LEAF_RULES
    assert isinstance(agent.subagent_folders, bool)
    if agent.documents is not None:  # one-document files (Gemini CLI's `session-*.json`)
        documents = agent.documents
        assert documents.suffix.startswith(".") and documents.suffix != ".jsonl"
        assert callable(documents.records) and callable(documents.continuation)
        assert isinstance(documents.refusal, str) and documents.refusal
        assert callable(documents.as_line)
    assert agent.checkpoints is None or callable(agent.checkpoints)
    appends = agent.rewind_line is not None or agent.rewind_marker is not None
    assert agent.rewinds_by_appending is appends
    assert agent.run_args is None or callable(agent.run_args)
    assert isinstance(agent.resume_word, str) and agent.resume_word.strip()
    assert all(isinstance(name, str) and "/" not in name for name in agent.legacy_roots)
    assert agent.line_chain is None or callable(agent.line_chain)
    assert all("/" not in name for name in (agent.sessions_root, agent.archive_root))
    assert isinstance(agent.can_branch, bool) and callable(agent.session_id_of)
    assert isinstance(agent.can_rewind, bool)
    if agent.prefix_fork is not None:
        writer = agent.prefix_fork
        functions = ("refusal", "meta_line", "new_id", "folder", "file_name")
        assert all(callable(getattr(writer, f)) for f in functions)
        assert isinstance(writer.turn_opening, frozenset) and isinstance(writer.meta_type, str)
        assert isinstance(writer.beside_source, bool)
        assert all(f is None or callable(f) for f in (writer.keeps, writer.restamp))
    assert agent.usage_reader is None or callable(agent.usage_reader)
    # The interface is the dataclass's fields: nothing an agent may leave out.
    fields = {f.name for f in dataclasses.fields(Agent)}
    assert fields <= set(INTERFACE)


# Only agents that branch write records (titles, rewind markers); the others' writers are
# never called (the guards refuse first, `test_codex.py` tests that), so there is no
# record of theirs to read back.
# An agent whose forks copy a prefix of the file (`prefix_fork`, Codex) writes no title line.
BRANCHING_AGENTS = [a for a in EVERY_AGENT if a.can_branch and a.prefix_fork is None]


@pytest.mark.parametrize("agent", BRANCHING_AGENTS, ids=lambda a: a.name)
def test_every_agent_reads_back_the_records_it_writes(agent: Agent) -> None:
    sid = str(uuid.uuid4())
    line = agent.title_line(session_id=sid, title="A title", parent_uuid=None, base={})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    record = agent.parse_line(line)
    assert (record.kind, record.title, record.session_id) == (TITLE, "A title", sid)
    if agent.rewind_line is not None:
        parent = str(uuid.uuid4())
        line = agent.rewind_line(
            session_id=sid, parent_uuid=parent, removed_turns=2, undo=False, base={}
        )
        record = agent.parse_line(line)
        assert (record.kind, record.parent_uuid, record.session_id) == (REWIND, parent, sid)


def test_the_registry_and_the_old_constants_agree() -> None:
    assert AGENTS == (CLAUDE, QWEN, CODEX, GEMINI) == tuple(REGISTRY)
    assert AGENT_LABELS == {
        CLAUDE: "Claude Code",
        QWEN: "Qwen Code",
        CODEX: "Codex CLI",
        GEMINI: "Gemini CLI",
    }
    assert all(agent_for(name).name == name for name in AGENTS)
    claude, qwen = agent_for(CLAUDE), agent_for(QWEN)
    assert (claude.cli, claude.leaf_rule, claude.rewinds_by_appending) == (
        "claude",
        NEWEST_LEAF,
        False,
    )
    assert (qwen.cli, qwen.leaf_rule, qwen.rewinds_by_appending) == ("qwen", LAST_RECORD, True)
    codex = agent_for(CODEX)
    assert (codex.cli, codex.sessions_root, codex.archive_root, codex.can_branch) == (
        "codex",
        "sessions",
        "archived_sessions",
        True,
    )
    # Codex is forked and rewound as self-contained prefixes of its rollout (prefixing.py).
    assert codex.prefix_fork is not None and codex.can_rewind is True
    # The layout tells agents apart: one keeps sessions in the project folder itself; an
    # agent with dated folders (Codex) is told apart by its root instead, one whose files
    # have a name of their own (Gemini's `session-*`) by that name.
    subfolders = [
        a.sessions_subfolder for a in REGISTRY.values() if not a.sessions_root and not a.file_prefix
    ]
    assert subfolders.count("") == 1 and len(set(subfolders)) == len(subfolders)


def test_an_agent_that_cannot_work_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match="rewind by appending needs last_record"):
        dataclasses.replace(fake_agent.AGENT, rewind_line=fake_agent.rewind_line)
    with pytest.raises(ValueError, match="leaf_rule"):
        dataclasses.replace(fake_agent.AGENT, leaf_rule="first_record")
    with pytest.raises(ValueError, match="16 characters"):
        dataclasses.replace(fake_agent.AGENT, name="a-very-long-agent-name")


def test_an_unknown_agent_is_a_clear_error() -> None:
    with pytest.raises(
        ValueError, match="unknown agent 'nope'; known agents: claude, qwen, codex, gemini"
    ):
        agent_for("nope")
    with pytest.raises(ValueError, match="unknown agent"):
        parse_line("nope", b"{}")


def test_layouts_say_where_session_files_live() -> None:
    sid = "6fbeb39a-1e79-43ef-995c-46eedd93e6fe"
    project = Path("/root/-home-dev-app")
    claude, qwen = agent_for(CLAUDE), agent_for(QWEN)
    assert claude.session_file(project, sid) == project / f"{sid}.jsonl"
    assert qwen.session_file(project, sid) == project / "chats" / f"{sid}.jsonl"
    assert qwen.project_folder_of(project / "chats" / f"{sid}.jsonl") == project
    assert qwen.project_folder_of(project / f"{sid}.jsonl") is None
    assert claude.project_folder_of(project / f"{sid}.jsonl") == project
    relative = Path("-home-dev-app")
    assert claude.is_session_path(relative / f"{sid}.jsonl")
    assert not qwen.is_session_path(relative / f"{sid}.jsonl")
    assert qwen.is_session_path(relative / "chats" / f"{sid}.jsonl")
    assert not claude.is_session_path(relative / "chats" / f"{sid}.jsonl")
    for agent in (claude, qwen):
        assert not agent.is_session_path(relative / "deeper" / "still" / f"{sid}.jsonl")
        assert not agent.is_session_path(relative / "notes.jsonl")
    assert detect_agent_from_path(project / "chats" / f"{sid}.jsonl") == QWEN
    assert detect_agent_from_path(project / "agent-a1.jsonl") == CLAUDE


# An agent branch at a call site: `agent == QWEN`, `session.agent == "claude"`,
# `"qwen" if ... else "claude"`, `qwen if ... else claude`, `agent in (...)`.
AGENT_BRANCH_RE = re.compile(
    r"""\bagent\s*[!=]=
    | [!=]=\s*(?:QWEN|CLAUDE)\b | \b(?:QWEN|CLAUDE)\s*[!=]=
    | [!=]=\s*["'](?:claude|qwen)["'] | ["'](?:claude|qwen)["']\s*[!=]=
    | ["'](?:claude|qwen)["']\s+if\b | \b(?:claude|qwen)\s+if\s
    | \bagent\s+(?:not\s+)?in\s*[(\[{]""",
    re.X,
)
AGENT_CONSTANT_RE = re.compile(r"\b(?:QWEN|CLAUDE)\b")


def _outside_formats() -> list[Path]:
    code = [
        p for p in APP.rglob("*.py") if p.relative_to(APP).parts[0] not in ("formats", "migrations")
    ]
    return code + sorted(TEMPLATES.rglob("*.html"))


def test_the_branch_pattern_catches_what_it_forbids() -> None:
    for line in (
        "    if agent == QWEN:",
        '    return "qwen" if session.agent == QWEN else "claude"',
        "    reader = qwen if session.agent == QWEN else claude",
        '{% if session.agent == "claude" %}',
        '    key = "parts" if agent == QWEN else "content"',
        "    if session.agent != CLAUDE:",
    ):
        assert AGENT_BRANCH_RE.search(line), line
    assert not AGENT_BRANCH_RE.search("    return agent_for(session.agent).cli")


def test_nothing_outside_formats_branches_on_the_agent() -> None:
    found = [
        f"{path.relative_to(APP.parent)}:{n}: {line.strip()}"
        for path in _outside_formats()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if AGENT_BRANCH_RE.search(line) or AGENT_CONSTANT_RE.search(line)
    ]
    assert not found, "ask formats.agent_for(...) instead:\n" + "\n".join(found)


# --- A third agent: one module (tests/fake_agent.py), registered, and nothing else.


def fake_records(sid: str) -> list[dict]:
    base = {"sessionId": sid, "cwd": "/home/dev/fake"}
    ids = [str(uuid.uuid4()) for _ in range(8)]

    def rec(n: int, kind: str, **fields: object) -> dict:
        parent = ids[n - 1] if n else None
        time = f"2026-03-01T10:00:{n:02d}.000Z"
        return {"type": kind, "uuid": ids[n], "parentUuid": parent, "timestamp": time, **fields}

    records = [
        rec(0, "ask", text="Add a test for the parser"),
        rec(
            1,
            "answer",
            model="fake-1",
            steps=[
                {"think": "A parser test needs a sample."},
                {"say": "I will run the tests."},
                {"run": {"id": "r1", "tool": "Bash", "args": {"command": "pytest -q"}}},
            ],
        ),
        rec(2, "result", results=[{"id": "r1", "output": "3 passed"}]),
        rec(3, "answer", steps=[{"say": "All three pass."}]),
        rec(4, "ask", text="Now make it faster"),
        rec(5, "answer", steps=[{"say": "Done: twice as fast."}]),
        rec(6, "ask", text="Write it up"),
        rec(7, "answer", steps=[{"say": "Written."}]),
    ]
    # The session id last, as the CLIs write it, so a copy restamps it in place.
    return [{**r, **base} for r in records] + [{"type": "title", "title": "Parser tests", **base}]


def write_fake_session(root: Path) -> tuple[str, Path]:
    sid = str(uuid.uuid4())
    path = fake_agent.AGENT.session_file(root / "-home-dev-fake", sid)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in fake_records(sid)))
    make_idle(root)
    return sid, path


@pytest.fixture
def fake_root(tmp_path: Path, settings, monkeypatch) -> Path:
    monkeypatch.setitem(formats.REGISTRY, fake_agent.NAME, fake_agent.AGENT)
    root = tmp_path / "fake-root"
    root.mkdir()
    settings.SESSION_ROOTS = [root]
    return root


@pytest.mark.django_db
def test_a_third_agent_is_imported_shown_forked_and_rewound(client, fake_root: Path) -> None:
    sid, path = write_fake_session(fake_root)
    report = sessions_import(roots=[fake_root])
    assert not report.errors
    session = Session.objects.select_related("project").get(session_id=sid)
    assert (session.agent, session.project.agent) == ("fake", "fake")
    assert (session.turn_count, session.title, session.cwd) == (3, "Parser tests", "/home/dev/fake")
    assert resume_command(session) == f"cd /home/dev/fake && fake --resume {sid}"

    response = client.get(f"/sessions/{sid}/")
    assert response.status_code == 200
    html = response.content.decode()
    for shown in (
        "Add a test for the parser",
        "A parser test needs a sample.",
        "I will run the tests.",
        "pytest -q",
        "3 passed",
        "All three pass.",
        "Write it up",
    ):
        assert shown in html, shown

    fork = session_fork(session=session, turn=2)
    assert Path(fork.path).parent == path.parent and fork.agent == "fake"
    assert (fork.turn_count, fork.title) == (2, "Parser tests (Branch)")
    last = orjson.loads(Path(fork.path).read_bytes().splitlines()[-1])
    assert last == {
        "type": "title",
        "title": "Parser tests (Branch)",
        "sessionId": str(fork.session_id),
    }

    original = path.read_bytes()
    rewound = session_rewind(session=session, turn=2)
    assert rewound.turn_count == 1
    backup = Session.objects.get(session_id=rewound.rewind_undo["backup_id"])
    assert (backup.kind, backup.agent, backup.turn_count) == ("rewind_backup", "fake", 3)
    restored = session_rewind_undo(session=rewound)
    assert path.read_bytes() == original and restored.turn_count == 3


@pytest.mark.django_db
def test_a_third_agent_that_rewinds_by_appending(fake_root: Path, monkeypatch) -> None:
    appending = dataclasses.replace(
        fake_agent.AGENT, leaf_rule=LAST_RECORD, rewind_line=fake_agent.rewind_line
    )
    monkeypatch.setitem(formats.REGISTRY, fake_agent.NAME, appending)
    sid, path = write_fake_session(fake_root)
    sessions_import(roots=[fake_root])
    session = Session.objects.select_related("project").get(session_id=sid)
    original = path.read_bytes()
    rewound = session_rewind(session=session, turn=2)
    data = path.read_bytes()
    assert data.startswith(original) and orjson.loads(data[len(original) :])["type"] == "rewind"
    assert rewound.turn_count == 1
    assert session_rewind_undo(session=rewound).turn_count == 3


def test_each_agent_names_its_default_roots() -> None:
    home = Path("/home/dev")

    def roots(environ: dict[str, str]) -> list[Path]:
        return [a.home(environ, home) / f for a in REGISTRY.values() for f in a.root_folders]

    assert roots({}) == [
        home / ".claude/projects",
        home / ".qwen/projects",
        home / ".qwen/tmp",
        home / ".codex/sessions",
        home / ".codex/archived_sessions",
        home / ".gemini/tmp",
    ]
    # CODEX_HOME moves all that Codex keeps; the other agents stay where they were.
    moved = roots({"CODEX_HOME": "/srv/codex"})
    assert moved[-3:-1] == [Path("/srv/codex/sessions"), Path("/srv/codex/archived_sessions")]
    assert moved[:3] == roots({})[:3]
