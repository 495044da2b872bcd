"""Another account on the machine asks a real gunicorn on loopback: 403, and nothing starts.

The dashboard runs as this test's account (the owner); the stranger is `nobody`, reached
with `setpriv` (so the test needs root, as CI has), asking with the standard library
only, as anyone on a shared server could.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest

from sessions_app.services.owner_token import owner_token
from tests.factories import assistant_record, user_record

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")  # one that `nobody` may run, unlike a venv's
FORGED_CSRF = "a" * 32  # any client can make up a CSRF cookie and the same token
GUNICORN = (sys.executable, "-m", "gunicorn", "branchboard.wsgi")
AS_NOBODY = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")

STRANGER = """
import json, os, sys, urllib.error, urllib.request
port, sid, token_path = sys.argv[1:4]
base = f"http://127.0.0.1:{port}"
seen = {"uid": os.getuid()}
try:
    open(token_path).read()
    seen["token file"] = "read"
except OSError as exc:
    seen["token file"] = type(exc).__name__

def status(request):
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code

for path in ("/", f"/sessions/{sid}/", "/search/?q=prompt", "/api/search?q=prompt",
             f"/api/sessions/{sid}", f"/?token={'x' * 43}"):
    seen[path] = status(base + path)
forged = sys.argv[4]
seen["run"] = status(urllib.request.Request(
    f"{base}/sessions/{sid}/runs/",
    data=b"prompt=cat+~/.ssh/id_ed25519&mode=full",
    headers={"Cookie": f"csrftoken={forged}", "X-CSRFToken": forged, "HX-Request": "true"},
))
print(json.dumps(seen))
"""

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not SYSTEM_PYTHON.exists(),
    reason="asking as another account needs root, setpriv and /usr/bin/python3",
)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _served(tmp_path: Path) -> tuple[dict[str, str], str, Path]:
    """A data folder with one idle session whose folder is here, and a CLI that leaves a mark."""
    root, work, data = tmp_path / "root", tmp_path / "work", tmp_path / "data"
    work.mkdir()
    sid = "0b6c3f2e-8a51-4c1e-9d7a-3f0e5c2b1a90"
    prompt = user_record("prompt 1", sid=sid, cwd=str(work))
    answer = assistant_record("answer 1", sid=sid, parent=prompt["uuid"], cwd=str(work))
    folder = root / "-work"
    folder.mkdir(parents=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (prompt, answer)))
    os.utime(path, (time.time() - 60, time.time() - 60))
    mark = tmp_path / "the-cli-ran"
    cli = tmp_path / "claude"
    cli.write_text(f"#!/bin/sh\ntouch {mark}\n")
    cli.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env.update(
        BRANCHBOARD_DATA_DIR=str(data),
        BRANCHBOARD_ROOTS=str(root),
        BRANCHBOARD_CLAUDE_COMMAND=str(cli),
        BRANCHBOARD_WORKERS="1",
    )
    for args in (["migrate", "-v", "0"], ["import_sessions", "--no-progress"]):
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)
    return env, sid, mark


def _runs(data: Path) -> int:
    with sqlite3.connect(f"file:{data / 'branchboard.sqlite3'}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM sessions_app_run").fetchone()[0]


def _status(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_another_account_reads_nothing_and_starts_nothing(tmp_path: Path) -> None:
    env, sid, mark = _served(tmp_path)
    data = Path(env["BRANCHBOARD_DATA_DIR"])
    port = _free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [*GUNICORN, "-c", str(ROOT / "deploy" / "gunicorn.conf.py"), "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    token = owner_token(folder=data)
    owner = {"Authorization": f"Bearer {token}"}
    try:
        deadline = time.monotonic() + 60
        while _status_or_none(f"http://127.0.0.1:{port}/", owner) != 200:
            assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
            assert time.monotonic() < deadline, "gunicorn did not answer in 60 s"
            time.sleep(0.1)

        asked = [str(port), sid, str(data / "owner_token"), FORGED_CSRF]
        done = subprocess.run(
            [*AS_NOBODY, str(SYSTEM_PYTHON), "-c", STRANGER, *asked],
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen.pop("uid") == NOBODY
        assert seen.pop("token file") == "PermissionError"
        assert seen == dict.fromkeys(seen, 403), seen
        assert _runs(data) == 0 and not mark.exists()

        # The owner's same post starts the CLI: the stranger's lacked only the token.
        run = urllib.request.Request(
            f"http://127.0.0.1:{port}/sessions/{sid}/runs/",
            data=b"prompt=hi&mode=full",
            headers={
                **owner,
                "Cookie": f"csrftoken={FORGED_CSRF}",
                "X-CSRFToken": FORGED_CSRF,
                "HX-Request": "true",
            },
        )
        assert _status(run) == 200
        deadline = time.monotonic() + 30
        while not mark.exists():
            assert time.monotonic() < deadline, "the owner's run did not start the CLI"
            time.sleep(0.05)
        assert _runs(data) == 1
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _status_or_none(url: str, headers: dict[str, str]) -> int | None:
    try:
        return _status(urllib.request.Request(url, headers=headers))
    except OSError:
        return None
