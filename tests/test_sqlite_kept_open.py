"""The pages' server keeps each worker thread's SQLite connection between requests (a
search then finds the index's pages in its cache); other processes open their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOW = (
    "import os, runpy, sys\n"
    "if sys.argv[1] == 'served': runpy.run_path('deploy/gunicorn.conf.py')\n"
    "os.environ['DJANGO_SETTINGS_MODULE'] = 'branchboard.settings'\n"
    "from django.conf import settings\n"
    "db = settings.DATABASES['default']\n"
    "print(db['ENGINE'].rsplit('.', 1)[-1], db['CONN_MAX_AGE'])\n"
)


def _conn_max_age(how: str, tmp_path: Path) -> str:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "BRANCHBOARD_SQLITE"))
    }
    env["BRANCHBOARD_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", SHOW, how], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_gunicorn_keeps_sqlite_connections_and_commands_do_not(tmp_path: Path) -> None:
    assert _conn_max_age("served", tmp_path) == "sqlite3 600"
    assert _conn_max_age("command", tmp_path) == "sqlite3 0"
