"""The data folder holds every transcript's text, login sessions and token hashes: only its owner reads it.

Each test runs `manage.py` in a subprocess under umask 022 (the usual default, which
leaves new folders 0755 and new files 0644) with a data folder of its own, on SQLite.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from .corpus import ALL_ROOTS, FIXTURES

ROOT = Path(__file__).resolve().parent.parent

PAGE_VIEW_AND_LOG = """
from pathlib import Path
from django.conf import settings
from django.test import Client
from sessions_app.management.commands.import_sessions import _log_to_file
from sessions_app.models import Session
from sessions_app.services.owner_token import owner_token
sid = Session.objects.exclude(turn_count=0).first().session_id
owner = {"Authorization": "Bearer " + owner_token(folder=settings.DATA_DIR)}
for url in ("/", f"/sessions/{sid}/", "/search/?q=the"):
    answer = Client(headers=owner).get(url, SERVER_NAME="localhost")
    assert answer.status_code == 200, (url, answer.status_code)
import logging
_log_to_file(Path(settings.IMPORT_LOG))
logging.getLogger("sessions_app.management.commands.import_sessions").warning("logged")
"""


def manage(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py <args>` under umask 022 with `data` as the data folder, on SQLite."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "BRANCHBOARD_SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    env["BRANCHBOARD_DATA_DIR"] = str(data)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )


def modes(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (itself as "."), with its permission bits in octal."""
    found = {".": oct(stat.S_IMODE(folder.stat().st_mode))}
    for path in folder.rglob("*"):
        found[str(path.relative_to(folder))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def test_a_fresh_data_folder_and_every_file_in_it_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    roots = [arg for r in ALL_ROOTS for arg in ("--root", str(FIXTURES / r))]
    for args in (["migrate"], ["import_sessions", "--no-progress", *roots]):
        done = manage(data, *args)
        assert done.returncode == 0, done.stdout + done.stderr
    done = manage(data, "shell", "-c", PAGE_VIEW_AND_LOG)
    assert done.returncode == 0, done.stdout + done.stderr
    found = modes(data)
    # What the test means to cover is there: the database, its WAL, the keys, the log.
    assert {"branchboard.sqlite3", "secret_key", "owner_token", "import.log"} <= set(found), found
    assert found.pop(".") == "0o700"
    assert found == {name: "0o600" for name in found}


def test_an_existing_open_data_folder_is_tightened_once_with_a_message(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    (data / "branchboard.sqlite3").touch()
    (data / "branchboard.sqlite3").chmod(0o644)
    (data / "secret_key").write_text("k" * 50)
    (data / "secret_key").chmod(0o644)
    (data / "failed-runs").mkdir()
    (data / "failed-runs").chmod(0o755)
    (data / "failed-runs" / "run-1.jsonl").write_text("{}\n")
    (data / "failed-runs" / "run-1.jsonl").chmod(0o644)
    done = manage(data, "check")
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stderr
    assert str(data) in said and "0755" in said and "0700" in said, said
    assert "branchboard.sqlite3" in said and "secret_key" in said and "run-1.jsonl" in said, said
    found = modes(data)
    # The search words' file (and SQLite's files beside it), made private as it is made.
    words = {name: mode for name, mode in found.items() if name.startswith("branchboard-words")}
    assert set(words.values()) == {"0o600"} and "branchboard-words.sqlite3" in words, words
    assert {name: mode for name, mode in found.items() if name not in words} == {
        ".": "0o700",
        "branchboard.sqlite3": "0o600",
        "secret_key": "0o600",
        "failed-runs": "0o700",
        "failed-runs/run-1.jsonl": "0o600",
    }
    again = manage(data, "check")
    assert again.returncode == 0 and str(data) not in again.stderr, again.stderr
