"""The CLI's process: started as its own process group, found again by pid and start time
(`services/process_groups.py`).

A run's process group is the CLI's pid (`start_new_session`), so a stop reaches
the CLI and everything it started. A pid is only trusted together with the start
time the kernel gives it (`/proc/<pid>/stat`, field 22), so a pid reused by an
unrelated process after a restart is never signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import IO

from ..process_groups import alive


def signal_group(pid: int, started: int | None, sig: signal.Signals) -> bool:
    """Send `sig` to the run's process group while it is still the run's."""
    if not alive(pid, started):
        return False
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return False
    return True


def cli_environment() -> dict[str, str]:
    """The server's environment for the CLI, less the dashboard's own settings."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("BRANCHBOARD_", "DJANGO_")) and name != "DATABASE_URL"
    }


def spawn(args: list[str], *, cwd: str, stderr: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start the CLI: no shell, no stdin, its own session and process group."""
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=cli_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
        close_fds=True,
    )
