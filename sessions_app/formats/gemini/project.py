"""Where Gemini CLI keeps a project's sessions, and which session a file holds, pure I/O.

`~/.gemini/tmp/<slug>/chats/session-<minute>-<first 8 of the id>.jsonl` (older releases:
`tmp/<sha256 of the project path>/chats/`, and before 0.4x one-document `session-*.json`
files). The file name holds only part of the id: the whole one is `sessionId` on the
file's first line (a document's first key). The slug folder names its real path in
a `.project_root` marker, and `~/.gemini/projects.json` maps paths to slugs.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import orjson

from ..kinds import is_session_id

# `session-2026-04-24T23-16-c8b2cbd9.jsonl`: the minute it began, the id's first 8.
SESSION_NAME_RE = re.compile(r"^session-[0-9T:-]+-([0-9A-Za-z-]{8})\.jsonl?$")
# An older release's one-document file names its id first: `{\n  "sessionId": "<id>",`.
DOCUMENT_HEAD_RE = re.compile(rb'\A\s*\{\s*"sessionId"\s*:\s*"([0-9A-Fa-f-]{36})"')
HEAD_LIMIT = 256 * 1024
MARKER_LIMIT = 4096


def head_session_id(path: Path) -> str | None:
    """The session id of a Gemini session file: its first line's `sessionId`, which the
    name must end with; None for any other file (a stub, a checkpoint, a stray file)."""
    match = SESSION_NAME_RE.match(path.name)
    if match is None:
        return None
    try:
        with open(_regular(path), "rb") as f:
            head = f.readline(HEAD_LIMIT) if path.suffix == ".jsonl" else f.read(4096)
        found = DOCUMENT_HEAD_RE.match(head) if path.suffix == ".json" else None
        data = {"sessionId": found.group(1).decode()} if found else orjson.loads(head)
    except (OSError, orjson.JSONDecodeError):
        return None
    session_id = data.get("sessionId") if isinstance(data, dict) else None
    if not isinstance(session_id, str) or not is_session_id(session_id):
        return None
    session_id = session_id.lower()
    return session_id if session_id[:8] == match.group(1).lower() else None


def project_path(project_folder: Path) -> str:
    """The real path of the project a slug folder holds sessions of: its `.project_root`
    marker, else the path `projects.json` maps to it; "" when neither says."""
    try:
        with open(_regular(project_folder / ".project_root"), "rb") as f:
            marker = f.read(MARKER_LIMIT + 1).decode("utf-8", "replace").strip()
    except OSError:
        marker = ""
    if _is_path(marker):
        return marker
    try:
        with open(_regular(project_folder.parent.parent / "projects.json"), "rb") as f:
            projects = orjson.loads(f.read(16 * 1024 * 1024)).get("projects")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return ""
    if not isinstance(projects, dict):
        return ""
    for path, slug in projects.items():
        if slug == project_folder.name and _is_path(path):
            return path
    return ""


def _is_path(value: object) -> bool:
    return (
        isinstance(value, str)
        and value.startswith("/")
        and len(value) <= MARKER_LIMIT
        and "\x00" not in value
        and "\n" not in value
    )


def _regular(path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """`path` when it is a regular file, not a link (formats only read: the check and the
    open are two steps, and what could slip between them is read, never written)."""
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise OSError(f"{path}: not a regular file")
    return path
