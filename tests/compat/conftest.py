"""Fixtures for the CLI compatibility tests (no Django here).

`clis` installs the real claude and qwen CLIs once per test session, and
`codex_cli` the codex CLI (each skipped, with the reason shown, only when npm
is not on PATH); `fake_model` is a fresh
loopback fake model server per test; `cli_home` is a throwaway HOME with a
project folder inside it to run the CLIs in.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.clis import CliHome, ensure_clis, ensure_codex
from tests.compat.fake_gemini import FakeGemini
from tests.compat.fake_model import FakeModel
from tests.compat.gemini_cli import ensure_gemini


@pytest.fixture(scope="session")
def clis() -> dict[str, Path]:
    """{"claude": path, "qwen": path}, installed with npm into the CLI cache."""
    if shutil.which("npm") is None:
        pytest.skip("compat: npm is not on PATH, so the claude and qwen CLIs cannot be installed")
    return ensure_clis()


@pytest.fixture(scope="session")
def codex_cli() -> Path:
    """The codex command (@openai/codex 0.169.0), installed with npm into the CLI cache."""
    if shutil.which("npm") is None:
        pytest.skip("compat: npm is not on PATH, so the codex CLI cannot be installed")
    return ensure_codex()


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    with FakeModel() as fm:
        yield fm


@pytest.fixture
def cli_home(tmp_path: Path) -> CliHome:
    home = tmp_path / "home"
    cwd = home / "project"
    cwd.mkdir(parents=True)
    return CliHome(home=home, cwd=cwd)


@pytest.fixture(scope="session")
def gemini_cli() -> Path:
    """The gemini command (@google/gemini-cli 0.61.0), installed with npm into the CLI cache."""
    if shutil.which("npm") is None:
        pytest.skip("compat: npm is not on PATH, so the gemini CLI cannot be installed")
    return ensure_gemini()


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A loopback fake Gemini API, recording what the CLI sends."""
    with FakeGemini() as fake:
        yield fake
