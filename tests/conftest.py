from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_ROOTS = ("cli/claude", "public/claude")
QWEN_ROOTS = ("cli/qwen", "synthetic/qwen")
ALL_ROOTS = CLAUDE_ROOTS + QWEN_ROOTS


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A writable copy of the fixture corpus, so tests can grow and damage files."""
    target = tmp_path / "corpus"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture
def corpus_roots(corpus: Path) -> list[Path]:
    return [corpus / r for r in ALL_ROOTS]
