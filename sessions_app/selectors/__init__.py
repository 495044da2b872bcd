"""Reads for the pages: one function per page-sized question.

Modules, one capability each: `lists` (projects, the sessions of a project, the
recent sessions of all, one listed session), `records` (transcript records of a
page, read from the file through the index), `branches` (abandoned branches and
their pages), `family` (fork lineage and subagent transcripts), `facts` (a session's summary, turns,
prompt texts, undo and edit state), `search` (hits across sessions, one per
distinct text, grouped by session) and `usage` (tokens and cost per day, model,
project, session, turn and family; imported from their modules, not re-exported).
Callers use `selectors.<name>`; every name of the first five is re-exported here.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..services.reading.branches import Branch, abandoned_branch, branch_records
    from ..services.reading.records import (
        PAGE_TURNS,
        active_records,
        page_records,
        record_at,
        subagent_records,
        transcript_records,
    )
    from .facts import edit_prompt, session_summary, turn_list, turn_prompt_text, undo_available
    from .family import lineage_of, subagents_of
    from .lists import (
        SESSION_SORTS,
        listed_session,
        newest_import,
        projects_for_dashboard,
        recent_sessions,
        rewind_undone,
        session_lines,
        sessions_of_project,
        undone_backups,
        undone_rewind,
        with_children_counts,
    )

# Each name's module, loaded when the name is first asked for: a command that prints a
# session's summary loads `facts`, not the family's rendering (markdown, highlighting).
_HOMES = {
    "..services.reading.branches": ("Branch", "abandoned_branch", "branch_records"),
    "..services.reading.records": (
        "PAGE_TURNS",
        "active_records",
        "page_records",
        "record_at",
        "subagent_records",
        "transcript_records",
    ),
    ".facts": ("edit_prompt", "session_summary", "turn_list", "turn_prompt_text", "undo_available"),
    ".family": ("lineage_of", "subagents_of"),
    ".lists": (
        "SESSION_SORTS",
        "listed_session",
        "newest_import",
        "projects_for_dashboard",
        "recent_sessions",
        "rewind_undone",
        "session_lines",
        "sessions_of_project",
        "undone_backups",
        "undone_rewind",
        "with_children_counts",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "PAGE_TURNS",
    "SESSION_SORTS",
    "Branch",
    "abandoned_branch",
    "active_records",
    "branch_records",
    "edit_prompt",
    "lineage_of",
    "listed_session",
    "newest_import",
    "page_records",
    "projects_for_dashboard",
    "recent_sessions",
    "record_at",
    "rewind_undone",
    "session_lines",
    "session_summary",
    "sessions_of_project",
    "subagent_records",
    "subagents_of",
    "transcript_records",
    "turn_list",
    "turn_prompt_text",
    "undo_available",
    "undone_backups",
    "undone_rewind",
    "with_children_counts",
]
