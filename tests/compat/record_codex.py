"""Record the Codex fixtures with the real codex CLI against the fake model.

Run from the repository root: `.venv/bin/python -m tests.compat.record_codex OUT [base|actions]`.
It makes sessions in a throwaway HOME (CODEX_HOME=HOME/.codex) and copies
CODEX_HOME/sessions into OUT/sessions, keeping the CLI's YYYY/MM/DD layout.
The SQLite databases beside them are not copied. It prints each session's id
and what it is, for the fixtures README.
"""

from __future__ import annotations

import json
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

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


def app_server_calls(
    exe: Path, home: Path, cwd: Path, fm: FakeModel, calls: list[tuple[str, dict[str, Any], str]]
) -> None:
    """Drive `codex app-server` (JSON-RPC over stdio): each call, then wait for its notification."""
    cmd = [str(exe), "app-server", *codex_options(fm)[5:]]  # the -c and --disable ones
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=codex_env(home, fm),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        proc.stdin.flush()

    def wait(match: Any) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                message = json.loads(lines.get(timeout=1))
            except queue.Empty:
                continue
            if match(message):
                if "error" in message:
                    raise SystemExit(f"app-server error: {message}")
                return message
        raise SystemExit("app-server did not answer in 60 s")

    init = {"clientInfo": {"name": "record_codex", "version": "0"}, "capabilities": {}}
    send({"id": 0, "method": "initialize", "params": init})
    wait(lambda m: m.get("id") == 0)
    send({"method": "initialized"})
    for n, (method, params, notification) in enumerate(calls, start=1):
        send({"id": n, "method": method, "params": params})
        wait(lambda m, n=n: m.get("id") == n)
        if notification:
            wait(lambda m, name=notification: m.get("method") == name)
        print(f"  app-server {method} {params}")
    proc.stdin.close()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def _turn_ids(home: Path, session_id: str) -> list[str]:
    """The turn ids of a rollout's `task_started` events, in order."""
    (path,) = codex_home(home).glob(f"sessions/*/*/*/rollout-*-{session_id}.jsonl")
    turns = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("payload", {}).get("type") == "task_started":
            turns.append(record["payload"]["turn_id"])
    return turns


def record_actions(out: Path) -> None:
    """A rollback (`thread/revert`) and a compaction (`thread/compact/start`) made by Codex."""
    exe = ensure_codex()
    with tempfile.TemporaryDirectory(prefix="codex-rec-") as tmp, FakeModel() as fm:
        home = Path(tmp) / "home"
        cwd = home / "project"
        cwd.mkdir(parents=True)
        sid = run_codex(home, cwd, fm, ["first prompt"], executable=exe).session_id
        assert sid
        run_codex(home, cwd, fm, ["resume", sid, "second prompt"], executable=exe)
        run_codex(home, cwd, fm, ["resume", sid, "third prompt, to be rolled back"], executable=exe)
        third = _turn_ids(home, sid)[2]
        app_server_calls(
            exe,
            home,
            cwd,
            fm,
            [
                ("thread/resume", {"threadId": sid}, ""),
                ("thread/revert", {"threadId": sid, "beforeTurnId": third}, ""),
            ],
        )
        run_codex(
            home, cwd, fm, ["resume", sid, "third prompt, after the rollback"], executable=exe
        )
        print(f"rollback {sid}")

        cid = run_codex(home, cwd, fm, ["before compaction one"], executable=exe).session_id
        assert cid
        run_codex(home, cwd, fm, ["resume", cid, "RUN: echo two"], executable=exe)
        app_server_calls(
            exe,
            home,
            cwd,
            fm,
            [
                ("thread/resume", {"threadId": cid}, ""),
                ("thread/compact/start", {"threadId": cid}, "turn/completed"),
            ],
        )
        run_codex(home, cwd, fm, ["resume", cid, "after compaction"], executable=exe)
        print(f"compaction {cid}")
        print("egress:", fm.egress_attempts, "unknown:", fm.unknown_paths)
        target = out / "sessions"
        shutil.copytree(codex_home(home) / "sessions", target, dirs_exist_ok=True)
        for path in sorted(target.rglob("*.jsonl")):
            print(" ", path.relative_to(out))


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
    # `python -m tests.compat.record_codex OUT [base|actions]`
    which = sys.argv[2] if len(sys.argv) > 2 else "base"
    (record if which == "base" else record_actions)(Path(sys.argv[1]))
