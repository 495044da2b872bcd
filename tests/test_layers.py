"""Habits that keep the layers apart, checked on the source itself."""

from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "sessions_app"

# Calls that create, change or remove files. Only services may make them.
WRITES = re.compile(
    r"""open\([^)]*["'](?:w|wb|a|ab|r\+|rb\+|x|xb)["']"""
    r"|os\.(?:open|replace|rename|link|unlink|remove|truncate|utime|mkdir|makedirs|symlink)\("
    r"|\.(?:write_bytes|write_text|unlink|mkdir|touch|symlink_to)\("
    r"|shutil\."
)


def app_modules() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if "migrations" not in p.parts)


# Writes that are not session files: the watcher's own log in the data folder, and the
# data folder's own modes (made private at start-up, before any service runs).
ALLOWED = {"management/commands/import_sessions.py", "data_folder.py"}


def test_only_services_write_files() -> None:
    offenders = []
    for path in app_modules():
        relative = path.relative_to(APP)
        if relative.parts[0] == "services" or str(relative) in ALLOWED:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if WRITES.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{relative}:{n}: {line.strip()}")
    assert offenders == []


def test_the_check_itself_sees_a_write() -> None:
    assert WRITES.search('with open(path, "wb") as f:')
    assert WRITES.search("os.replace(temp, target)")
    assert not WRITES.search('with open(path, "rb") as f:')


# About 500 lines is where a module has usually outgrown one concept: a hint to split it
# along a seam (a package named for the concept), never a split only to fit a count.
MODULE_LINES = 500


def test_no_module_is_past_about_500_lines() -> None:
    long = {
        str(p.relative_to(APP)): n
        for p in app_modules()
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}


def test_the_turn_rule_is_not_re_derived_from_kinds() -> None:
    """Turn starts are stored at import (Record.starts_turn); nobody filters kinds for them."""
    pattern = re.compile(r"kind__in=\[PROMPT, COMMAND\]")
    found = [str(p) for p in app_modules() if pattern.search(p.read_text())]
    assert found == []
