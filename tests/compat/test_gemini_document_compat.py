"""A fork of an older Gemini CLI release's one-document `.json` session, judged by `gemini` 0.61.

The document (both shapes: 2025's plain-string content, 2026-04's parts with notes and
tool calls) lies in the chats folder of a project the real CLI made, with that project's
hash, as an older release would have left it. A fork or branch of it is a `.jsonl`; the
real CLI resumes that fork and sends exactly the kept prompts, then goes on in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from tests.compat.clis import CliHome
from tests.compat.fake_gemini import FakeGemini
from tests.compat.gemini_cli import run_gemini

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]

DOCUMENTS = Path(__file__).parent.parent / "fixtures" / "gemini_documents" / "tmp"
OLD = DOCUMENTS / "0bf6933e8ef34a3bd42687dda8a365e4f876a36717528baf2e25a671d78459ae/chats"
OLD_DOC = OLD / "session-2025-09-16T20-39-38d857b1.json"
TOOL_DOC = DOCUMENTS / "toolproj/chats/session-2026-04-24T23-16-c8b2cbd9.json"
# The prompts the CLI sends of each (a `/stats`, a blank message and the context preamble
# are not sent), in turn order: counted by hand.
OLD_SENT = [
    "List the files in this folder",
    'Explain b.py, line by line: "quotes", {braces} and [brackets] included',
    "Thanks — merci, ça marche",
]
TOOL_SENT = ["Show me the files", "Now create hello.txt"]


def _document_in_a_real_project(
    gemini_cli: Path, fake: FakeGemini, cli_home: CliHome, document: Path
) -> Path:
    """`document` placed in the chats folder of the project the CLI keeps for `cwd`, as an
    older release wrote it (pretty-printed), under that project's hash."""
    home, cwd = cli_home.home, cli_home.cwd
    run_gemini(gemini_cli, home, cwd, fake, ["-p", "a session of this project"])
    (made,) = (home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")
    project_hash = orjson.loads(made.read_bytes().splitlines()[0])["projectHash"]
    data = json.loads(document.read_text())
    data["projectHash"] = project_hash
    placed = made.parent / document.name
    placed.write_text(json.dumps(data, indent=2, ensure_ascii=False))
    return placed


@pytest.mark.parametrize(
    ("document", "turn", "include_turn", "kept"),
    [
        (OLD_DOC, 2, True, OLD_SENT[:2]),  # fork at turn 2 of the 2025 shape
        (OLD_DOC, 3, False, OLD_SENT[:2]),  # edit & fork before turn 3
        (TOOL_DOC, 1, True, TOOL_SENT[:1]),  # the 2026-04 shape, with notes and tool calls
        (TOOL_DOC, None, True, TOOL_SENT),  # branch: the whole document
    ],
)
def test_a_fork_of_a_document_resumes_in_the_real_cli_with_exactly_its_turns(
    gemini_cli: Path,
    fake_gemini: FakeGemini,
    cli_home: CliHome,
    document: Path,
    turn: int | None,
    include_turn: bool,
    kept: list[str],
) -> None:
    home, cwd = cli_home.home, cli_home.cwd
    placed = _document_in_a_real_project(gemini_cli, fake_gemini, cli_home, document)
    before = placed.read_bytes()
    report = sessions_import(roots=[home / ".gemini" / "tmp"])
    assert not report.errors, report.errors
    source = Session.objects.get(path=str(placed))

    fork = session_fork(session=source, turn=turn, include_turn=include_turn)

    assert fork.path.endswith(".jsonl") and Path(fork.path).parent == placed.parent
    fake_gemini.requests.clear()
    run_gemini(
        gemini_cli, home, cwd, fake_gemini, ["-p", "delta four", "--resume", str(fork.session_id)]
    )
    assert fake_gemini.sent_prompts(0) == [*kept, "delta four"]
    # The CLI went on in the fork's own file; the document is as it was.
    assert placed.read_bytes() == before
    assert not placed.with_name(placed.name + "l").exists()
    sessions_import(roots=[home / ".gemini" / "tmp"])
    fork.refresh_from_db()
    assert fork.turn_count == len(kept) + 1
