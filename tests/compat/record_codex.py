"""Record the Codex fixtures with the real codex CLI against the fake model.

Run from the repository root: `.venv/bin/python -m tests.compat.record_codex OUT`.
It makes sessions in a throwaway HOME (CODEX_HOME=HOME/.codex) and copies
CODEX_HOME/sessions into OUT/sessions, keeping the CLI's YYYY/MM/DD layout.
The SQLite databases beside them are not copied. It prints each session's id
and what it is, for the fixtures README.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.compat.clis import (
    codex_env,
    codex_home,
    codex_options,
    ensure_codex,
    run_codex,
)
from tests.compat.fake_model import FakeModel


def _interrupted_turn(exe: Path, home: Path, cwd: Path, fm: FakeModel, session_id: str) -> None:
    """Resume with a prompt the fake model stalls on, then interrupt codex (SIGINT) mid-turn."""
    fm.stalled.clear()
    cmd = [str(exe), "exec", "resume", session_id, *codex_options(fm), "STALL: count to a million"]
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=codex_env(home, fm),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if not fm.stalled.wait(60):
        proc.kill()
        raise SystemExit("codex never reached the stalled request")
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    print(f"  interrupted run exited {proc.returncode}: {out[-400:]!r} {err[-400:]!r}")


def record(out: Path) -> None:
    exe = ensure_codex()
    with tempfile.TemporaryDirectory(prefix="codex-rec-") as tmp, FakeModel() as fm:
        home = Path(tmp) / "home"
        cwd = home / "project"
        cwd.mkdir(parents=True)
        (cwd / "README.md").write_text("# demo project\n")

        first = run_codex(home, cwd, fm, ["RUN: ls -1"], executable=exe)
        sid = first.session_id
        assert sid
        run_codex(home, cwd, fm, ["resume", sid, "PATCH: notes.txt :: first note"], executable=exe)
        run_codex(home, cwd, fm, ["resume", sid, "thanks, that is all"], executable=exe)
        print(f"three_turns {sid}")

        second = run_codex(home, cwd, fm, ["hello before an interrupt"], executable=exe)
        aborted = second.session_id
        assert aborted
        _interrupted_turn(exe, home, cwd, fm, aborted)
        run_codex(home, cwd, fm, ["resume", aborted, "after the interrupt"], executable=exe)
        print(f"aborted {aborted}")

        fork = run_codex(home, cwd, fm, ["fork", sid, "a prompt in the fork"], executable=exe)
        print(f"fork {fork.session_id} of {sid}")

        print("egress:", fm.egress_attempts, "unknown:", fm.unknown_paths)
        target = out / "sessions"
        shutil.copytree(codex_home(home) / "sessions", target, dirs_exist_ok=True)
        for path in sorted(target.rglob("*.jsonl")):
            print(" ", path.relative_to(out))


if __name__ == "__main__":
    record(Path(sys.argv[1]))
