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
heavy = ("branchboard.urls", "sessions_app.pages.sessions", "genai_prices", "markdown_it", "pygments")
loaded = [m for m in heavy if m in sys.modules]
print("LOADED", ",".join(loaded))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["fork_session", "--turn", "2"],
        ["rewind_session", "--turn", "2"],
        ["rewind_session", "--undo"],
    ],
)
def test_command_skips_system_checks_and_prices(argv: list[str], tmp_path: Path) -> None:
    """The checks load every URL and view (0.13-0.2 s), the page's renderers (Markdown,
    highlighting: about 50 ms) come with the selectors' package; the command needs none."""
    env = {**os.environ, "BRANCHBOARD_DATA_DIR": str(tmp_path / "data")}
    env["DJANGO_SETTINGS_MODULE"] = "branchboard.settings"
    # What the command loads does not depend on the database; SQLite in the empty data
    # folder keeps the child off the developer's own PostgreSQL database.
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv, "00000000-0000-0000-0000-000000000000"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("LOADED")]
    assert lines, done.stderr
    assert lines[-1] == "LOADED ", (lines[-1], done.stderr[-2000:])
    # It got as far as looking the session up (past the checks), and refused cleanly.
    assert "00000000-0000-0000-0000-000000000000" in done.stderr or "table" in done.stderr, (
        done.stderr
    )
