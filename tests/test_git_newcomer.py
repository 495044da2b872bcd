"""`make test` for a newcomer: the worktree tests pass without any git config of the user's.

A fresh user (or a container) has no `user.name`/`user.email`: a git call that commits
without its own identity fails there with "Author identity unknown" while it passes on a
developer's machine. So the whole suite runs as that user (`tests/conftest.py`,
`pytest_configure`): `GIT_CONFIG_GLOBAL=/dev/null`, no system config, and git told never
to guess an identity from the host's name (`user.useConfigOnly`), so a test or product
call that commits without an identity of its own fails here, on every machine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def test_the_suite_runs_as_a_newcomer_without_a_git_identity(tmp_path: Path) -> None:
    """What every other test stands on: here git has no identity to commit with."""
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    done = subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=tmp_path / "r",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "identity" in done.stderr.lower(), done.stderr
