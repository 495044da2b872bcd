"""A session's project, one rule for the pages and for what a machine pushes to its hub.

A session ran in the folder its records name first (`cwd` on each Claude Code and Qwen
Code record, Codex's `session_meta`, or before its envelope only `<environment_context>`),
as the agent's own parser reads them; a CLI whose records name none (Gemini CLI) recorded
the folder of its project folder (`.project_root`, `projects.json`). "" when neither says:
nobody can know, and the hub's push fails closed on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from .agent import Agent
from .common import PATH_LIMIT
from .documents import is_document

# Every reader names a folder with these letters (a `cwd` key, Codex's `<cwd>` tag), or
# spells them with an escape: a line with neither is passed by unparsed, so a file that
# names no folder (Gemini CLI's) costs a read, not a parse.
CWD, ESCAPE = b"cwd", b"\\u"


def session_project(agent: Agent, cwd: str | None, project_folder: Path) -> str:
    """The folder a session ran in: `cwd`, the first its records name, else the one its
    CLI recorded for `project_folder`; "" when neither says."""
    return (cwd or agent.project_path(project_folder))[:PATH_LIMIT]


def first_cwd(agent: Agent, f: BinaryIO, path: Path) -> str:
    """The first `cwd` the records of the open session file `f` (at `path`) name, each
    record read as the importer reads it; "" when none does."""
    records: Iterable[bytes]
    if is_document(agent.documents, path):
        assert agent.documents is not None
        whole = f.read()
        if CWD not in whole and ESCAPE not in whole:
            return ""
        records = (raw for _, raw in agent.documents.records(whole))
    else:
        records = f
    parse_line = agent.parse_line
    for raw in records:
        if (CWD in raw or ESCAPE in raw) and (cwd := parse_line(raw).cwd):
            return cwd
    return ""


def file_project(agent: Agent, f: BinaryIO, path: Path, project_folder: Path) -> str:
    """The project of the session file open as `f`, as its page shows it once imported."""
    return session_project(agent, first_cwd(agent, f, path), project_folder)
