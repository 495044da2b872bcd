"""The fixture corpus of all four agents imported and counted: Claude Code, Qwen Code and
Codex CLI (tests/fixtures), and the Gemini CLI fixtures under a home of their own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

from .corpus import CorpusCopy, make_idle

AGENTS = ("claude", "qwen", "codex", "gemini")
GEMINI = Path(__file__).parent / "fixtures" / "gemini"


@pytest.fixture(name="four")
def four_agents_imported(
    imported: Path, corpus_copy: CorpusCopy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus of Claude Code, Qwen Code and Codex CLI, and the Gemini fixtures, counted."""
    home = tmp_path / "home"
    shutil.copytree(GEMINI, home / ".gemini")
    root = home / ".gemini" / "tmp"
    make_idle(root)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    report = sessions_import(roots=[*corpus_copy.roots, root])
    assert not report.errors, report.errors
    assert not usage_refresh().errors
    assert set(Session.objects.values_list("agent", flat=True)) >= set(AGENTS)
