"""Start-up of the commands a user runs from a terminal: nothing they do not use is loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Runs the command as `manage.py` does, then says which of the heavy modules were loaded.
PROBE = """
import sys
from django.core.management import execute_from_command_line
try:
    execute_from_command_line(["manage.py", *sys.argv[1:]])
except (SystemExit, Exception) as error:  # an empty data folder has no tables
    print("ERROR", repr(error), file=sys.stderr)
import os
heavy = os.environ.get("PROBE_MODULES", "branchboard.urls,sessions_app.pages.sessions,genai_prices")
prefixes = heavy.split(",")
loaded = sorted({p for p in prefixes for m in list(sys.modules) if m == p or m.startswith(p + ".")})
print("LOADED", ",".join(loaded))
"""


def _loaded(argv: list[str], tmp_path: Path, modules: str | None = None) -> tuple[str, str]:
    """Run `manage.py <argv>` in a child; the heavy modules it loaded, and its stderr."""
    env = {**os.environ, "BRANCHBOARD_DATA_DIR": str(tmp_path / "data")}
    env["DJANGO_SETTINGS_MODULE"] = "branchboard.settings"
    # What the command loads does not depend on the database; SQLite in the empty data
    # folder keeps the child off the developer's own PostgreSQL database.
    env.pop("DATABASE_URL", None)
    if modules is not None:
        env["PROBE_MODULES"] = modules
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("LOADED")]
    assert lines, done.stderr
    return lines[-1], done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["fork_session", "--turn", "2"],
        ["rewind_session", "--turn", "2"],
        ["rewind_session", "--undo"],
    ],
)
def test_command_skips_system_checks_and_prices(argv: list[str], tmp_path: Path) -> None:
    """The checks load every URL and view (0.13-0.2 s); the command needs none of them."""
    line, stderr = _loaded([*argv, "00000000-0000-0000-0000-000000000000"], tmp_path)
    assert line == "LOADED ", (line, stderr[-2000:])
    # It got as far as looking the session up (past the checks), and refused cleanly.
    assert "00000000-0000-0000-0000-000000000000" in stderr or "table" in stderr, stderr


@pytest.mark.parametrize("command", ["fork_session", "rewind_session"])
def test_help_loads_no_service(command: str, tmp_path: Path) -> None:
    """`--help` answers from the command's arguments alone: no service, no selector, and
    `django.setup()` itself no longer loads the search package (apps.ready's signal)."""
    line, stderr = _loaded(
        [command, "--help"],
        tmp_path,
        "sessions_app.services,sessions_app.selectors,sessions_app.refusals,sessions_app.rendering",
    )
    assert line == "LOADED ", (line, stderr[-2000:])


@pytest.mark.parametrize(
    "argv", [["fork_session"], ["rewind_session", "--turn", "2"], ["rewind_session", "--undo"]]
)
def test_command_loads_no_page_rendering(argv: list[str], tmp_path: Path) -> None:
    """A fork or rewind prints a summary (`selectors.facts`): the family's rendering
    (markdown, highlighting, serializers) that the `selectors` package held is not loaded."""
    line, stderr = _loaded(
        [*argv, "00000000-0000-0000-0000-000000000000"],
        tmp_path,
        "sessions_app.rendering,sessions_app.selectors.family,markdown_it,pygments",
    )
    assert line == "LOADED ", (line, stderr[-2000:])
