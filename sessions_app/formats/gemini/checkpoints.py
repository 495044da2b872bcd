"""Gemini CLI's checkpoints beside its chats, read to be listed as what they are.

`/chat save <tag>` writes `tmp/<slug>/checkpoint-<encodeURIComponent(tag)>.json`: the
conversation as the model sees it (`{"history": [{role, parts}...], "authType"}`; before
0.2x a bare list), taken up again by `/chat resume <tag>`. Before each edit a tool makes,
with checkpointing on, the CLI writes a restore point `tmp/<slug>/checkpoints/<time>-<file>-
<tool>.json` (`{history, clientHistory, toolCall: {name, args}, commitHash}`), which
`/restore <name>` goes back to; the CLI deletes those at its next start. Neither is a
session: no id, no file the CLI resumes with `--resume`. Read only (files up to
`READ_LIMIT` are parsed; a bigger one is listed with its size).
"""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson

from ..checkpoints import Checkpoint

SAVED_RE = re.compile(r"^checkpoint-(.+)\.json$")
READ_LIMIT = 16 * 1024 * 1024
CONTEXT_OPENERS = ("<session_context>", "<hook_context>")


def _files(folder: Path, pattern: re.Pattern[str]) -> list[tuple[os.DirEntry[str], re.Match]]:
    """The regular files of `folder` (no link followed) whose names match `pattern`."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        match = pattern.match(entry.name)
        if match is not None and entry.is_file(follow_symlinks=False):
            found.append((entry, match))
    return found


def _read(entry: os.DirEntry[str]) -> tuple[os.stat_result, Any] | None:
    try:
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > READ_LIMIT:
            return st, None
        with open(entry.path, "rb") as f:
            return st, orjson.loads(f.read(READ_LIMIT + 1))
    except (OSError, orjson.JSONDecodeError):
        try:
            return entry.stat(follow_symlinks=False), None
        except OSError:
            return None


def history_prompts(history: Any) -> tuple[str, ...] | None:
    """The user's prompts in a history of `{role, parts}` contents: text parts of user
    contents, without function responses and the CLI's own context; None: no such list."""
    if not isinstance(history, list):
        return None
    prompts = []
    for content in history:
        if not isinstance(content, dict) or content.get("role") != "user":
            continue
        parts = content.get("parts")
        texts = [
            p["text"]
            for p in (parts if isinstance(parts, list) else ())
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        text = "".join(texts).strip()
        if text and not text.startswith(CONTEXT_OPENERS):
            prompts.append(text)
    return tuple(prompts)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _when(st: os.stat_result) -> datetime:
    return datetime.fromtimestamp(st.st_mtime, tz=UTC)


def saved_checkpoints(project_folder: Path) -> list[Checkpoint]:
    """The `/chat save` checkpoints and `/restore` points of a project folder, newest first."""
    found = []
    for entry, match in _files(project_folder, SAVED_RE):
        read = _read(entry)
        if read is None:
            continue
        st, data = read
        history = data.get("history") if isinstance(data, dict) else data
        tag = unquote(match.group(1))
        found.append(
            Checkpoint(
                "saved",
                tag,
                entry.path,
                _when(st),
                st.st_size,
                history_prompts(history),
                f"/chat resume {tag}",
            )
        )
    for entry, _ in _files(project_folder / "checkpoints", re.compile(r"^(.+)\.json$")):
        read = _read(entry)
        if read is None:
            continue
        st, data = read
        data = data if isinstance(data, dict) else {}
        name = entry.name.removesuffix(".json")
        call = _mapping(data.get("toolCall"))
        tool, target = call.get("name"), _mapping(call.get("args")).get("file_path")
        about = f"before {tool}" if isinstance(tool, str) else ""
        if about and isinstance(target, str):
            about += f" of {target}"
        found.append(
            Checkpoint(
                "restore",
                name,
                entry.path,
                _when(st),
                st.st_size,
                history_prompts(data.get("clientHistory")),
                f"/restore {name}",
                about,
            )
        )
    found.sort(key=lambda c: c.modified, reverse=True)
    return found
