"""The real Gemini CLI (@google/gemini-cli 0.61.0) for the compat tests, pointed at `FakeGemini`.

Installed with npm into its own prefix, `<CLI cache>/gemini` (the other CLIs' prefix is
left as it is), under a lock of its own. `run_gemini` runs `gemini --skip-trust -p P`
in a throwaway HOME whose `~/.gemini/settings.json` chooses an API key, turns off usage
statistics, telemetry, updates and session retention, and whose environment points the
CLI at the loopback fake (`GOOGLE_GEMINI_BASE_URL`); any other address goes to a proxy
that does not exist, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.compat.clis import CompatError, _locked, _npm_install, cache_dir
from tests.compat.fake_gemini import FakeGemini

GEMINI_PACKAGE = "@google/gemini-cli"
GEMINI_VERSION = "0.61.0"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
        "sessionRetention": {"enabled": False},
    },
    "telemetry": {"enabled": False},
}


def ensure_gemini() -> Path:
    """Install the Gemini CLI (once) and return its command."""
    prefix = cache_dir() / "gemini"
    prefix.mkdir(parents=True, exist_ok=True)
    with _locked(prefix):
        _npm_install(prefix, {GEMINI_PACKAGE: GEMINI_VERSION})
    path = prefix / "node_modules" / ".bin" / "gemini"
    if not path.exists():
        raise CompatError(f"gemini is not at {path} after npm install")
    return path


@dataclass(frozen=True)
class GeminiRun:
    returncode: int
    stdout: str
    stderr: str


def gemini_home(home: Path) -> Path:
    """`~/.gemini` of a throwaway HOME, with the settings an offline run needs."""
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(SETTINGS))
    return folder


def run_gemini(
    executable: Path, home: Path, cwd: Path, fake: FakeGemini, args: list[str]
) -> GeminiRun:
    """`gemini --skip-trust <args>` in `cwd` with HOME `home`; fails on a nonzero exit."""
    gemini_home(home)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "GEMINI_API_KEY": "x",
        "GOOGLE_GEMINI_BASE_URL": fake.url,
        "NO_PROXY": "127.0.0.1,localhost",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    proc = subprocess.run(
        [str(executable), "--skip-trust", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise CompatError(f"gemini {args} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return GeminiRun(proc.returncode, proc.stdout, proc.stderr)
