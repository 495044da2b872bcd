"""A process group found again by its leader's pid and start time, pure reads of `/proc`.

A pid is only trusted together with the start time the kernel gives it
(`/proc/<pid>/stat`, field 22), so a pid reused by an unrelated process after a restart
is never taken for a run's. Below the runs (which start and stop the groups) and the
branching guards (which refuse to write a session a live run is carrying on).
"""

from __future__ import annotations

from pathlib import Path


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
