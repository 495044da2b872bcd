"""`fork_session` and `rewind_session` take a session file's path for every agent: Codex
CLI's dated rollouts and Gemini CLI's `session-<minute>-<id[:8]>` files (the id in their
first line), older `.json` documents too, are found by the rules a scan follows."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import orjson
import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import Session

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures"
CODEX = "cli/codex/sessions/2026/11/26/rollout-2026-11-26T10-29-07-01a21766-de59-75e3-9552-c2130690b4b1.jsonl"
GEMINI = "demo-app/chats/session-2026-11-20T10-00-1a2b3c4d.jsonl"
DOCUMENT = "toolproj/chats/session-2026-04-24T23-16-c8b2cbd9.json"


def _fork(path: Path, *args: str) -> dict:
    out = io.StringIO()
    call_command("fork_session", str(path), *args, "--json", stdout=out)
    return orjson.loads(out.getvalue())


def test_a_codex_rollout_is_forked_by_its_path(tmp_path: Path, settings) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "cli" / "codex" / "sessions", root)
    settings.SESSION_ROOTS = [root]
    path = root / Path(CODEX).relative_to("cli/codex/sessions")

    info = _fork(path, "--turn", "1")

    assert info["turns"] == 1
    assert Session.objects.get(session_id=info["session_id"]).parent.session_id.hex[:8] == (
        "01a21766"
    )


def test_a_gemini_file_and_an_older_document_are_forked_by_their_paths(
    tmp_path: Path, settings
) -> None:
    root = tmp_path / "tmp"
    shutil.copytree(FIXTURES / "gemini" / "tmp", root)
    shutil.copytree(FIXTURES / "gemini_documents" / "tmp" / "toolproj", root / "toolproj")
    settings.SESSION_ROOTS = [root]

    info = _fork(root / GEMINI, "--turn", "2")
    document = _fork(root / DOCUMENT, "--turn", "1")

    assert info["turns"] == 2 and info["path"].endswith(".jsonl")
    source = Session.objects.get(path=str(root / GEMINI))
    assert str(source.session_id).startswith("1a2b3c4d")
    assert document["turns"] == 1 and document["path"].endswith(".jsonl")
    with pytest.raises(CommandError, match="not rewound in place"):
        call_command("rewind_session", str(root / DOCUMENT), "--turn", "2", stdout=io.StringIO())


def test_a_file_that_is_no_session_says_so(tmp_path: Path, settings) -> None:
    root = tmp_path / "tmp"
    shutil.copytree(FIXTURES / "gemini" / "tmp", root)
    settings.SESSION_ROOTS = [root]
    checkpoint = root / "demo-app" / "checkpoint-mytag.json"

    with pytest.raises(CommandError, match="not a session file where a session file lives"):
        call_command("fork_session", str(checkpoint), stdout=io.StringIO())
    with pytest.raises(CommandError, match="no such session file"):
        call_command("fork_session", str(root / GEMINI) + "x.jsonl", stdout=io.StringIO())
