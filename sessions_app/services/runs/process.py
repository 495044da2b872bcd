"""The CLI's process: started as its own process group, found again by pid and start time.

A run's process group is the CLI's pid (`start_new_session`), so a stop reaches
the CLI and everything it started. A pid is only trusted together with the start
time the kernel gives it (`/proc/<pid>/stat`, field 22), so a pid reused by an
unrelated process after a restart is never signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import IO


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):  # a zombie has finished
        return None
    return int(fields[19])


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (the CLI's helpers outlive it a moment)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def alive(pid: int | None, started: int | None) -> bool:
    """Whether the run's process group still runs: its leader (the process that had
    `pid` and started at `started`), or, once the leader is gone, a member of its group
    (a group id in use is never given to a new process)."""
    if pid is None or started is None:
        return False
    leader = start_time(pid)
    if leader is not None:
        return leader == started
    return bool(group_members(pid))


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
