"""`make test` for a newcomer: the worktree tests pass without any git config of the user's.

A fresh user (or a container) has no `user.name`/`user.email`: a git call that commits
without its own identity fails there with "Author identity unknown" while it passes on a
developer's machine. So the worktree tests are run again here as that user: `HOME` an
empty folder, `GIT_CONFIG_GLOBAL=/dev/null`, no system config, and git told never to
guess an identity from the host's name (`user.useConfigOnly`, through `GIT_CONFIG_*`,
which a call that passes the caller's environment on keeps), so that it fails the same
way whatever the machine's host name is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Every git repository the tests make, commit in and remove worktrees of.
WORKTREE_TESTS = sorted(str(p.relative_to(REPO)) for p in REPO.glob("tests/test_worktree*.py"))


def newcomer_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user with no git config at all, for a pytest run of its own."""
    home = tmp_path / "home"
    home.mkdir()
    # Dropped: git's own variables and the fallbacks git takes an identity from (EMAIL);
    # the database too, as the inner run makes its own SQLite database in its data folder
    # instead of colliding with this run's test database on PostgreSQL.
    dropped = {"EMAIL", "DATABASE_URL", "PYTEST_ADDOPTS", "XDG_CONFIG_HOME"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in dropped}
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_COUNT="1",
        GIT_CONFIG_KEY_0="user.useConfigOnly",
        GIT_CONFIG_VALUE_0="true",
        BRANCHBOARD_DATA_DIR=str(tmp_path / "data"),
    )
    return env


def test_a_commit_without_an_identity_fails_as_a_newcomer(tmp_path: Path) -> None:
    """The setting the next test stands on: here git has no identity to commit with."""
    env = newcomer_env(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], env=env, check=True)
    done = subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=tmp_path / "r",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "identity" in done.stderr.lower(), done.stderr


def test_the_worktree_tests_pass_without_a_git_identity(tmp_path: Path) -> None:
    assert len(WORKTREE_TESTS) >= 5, WORKTREE_TESTS
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*pytest, *WORKTREE_TESTS],
        cwd=REPO,
        env=newcomer_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    tail = "\n".join(done.stdout.splitlines()[-30:])
    assert done.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail, tail
