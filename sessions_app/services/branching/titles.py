"""Titles of new sessions: `<name> (Branch)`, `(Branch 2)`... unique within the project."""

from __future__ import annotations

import re

from ...formats import agent_for, collapse
from ...formats.markup import title_text
from ...models import TITLE_LIMIT, Session

DEFAULT_NAME = "Branched conversation"
BRANCH_SUFFIX_RE = re.compile(r" \(Branch(?: \d+)?\)$")


def clean_title(title: str) -> str:
    """A title lands in a database column and a file the CLI reads: no control characters."""
    return collapse("".join(ch if ch.isprintable() else " " for ch in title), TITLE_LIMIT)


def with_suffix(name: str, suffix: str) -> str:
    """`name` + `suffix` within the title limit: the name is cut, never the suffix."""
    room = TITLE_LIMIT - len(suffix)
    return (name if len(name) <= room else collapse(name, room)) + suffix


def source_name(session: Session) -> str:
    """What a branch of `session` is named after, without an earlier branch suffix."""
    name = session.custom_title or title_text(session.first_prompt) or DEFAULT_NAME
    return BRANCH_SUFFIX_RE.sub("", name) or DEFAULT_NAME


def unique_title(session: Session, title: str | None) -> str:
    """The given title, cleaned; else `<name> (Branch)`, `(Branch 2)`... unused in the project."""
    if title and (cleaned := clean_title(title)):
        return cleaned
    name = source_name(session)
    # A plain prefix of every candidate, however its name was cut to fit.
    stem = name[: TITLE_LIMIT - 40]
    taken = set(
        Session.objects.filter(project_id=session.project_id, title__startswith=stem).values_list(
            "title", flat=True
        )
    )
    candidate, n = with_suffix(name, " (Branch)"), 1
    while candidate in taken:
        n += 1
        candidate = with_suffix(name, f" (Branch {n})")
    return candidate


def backup_title(session: Session, turn: int) -> str:
    """The title of the backup a rewind keeps of the whole old file (Claude Code, Codex)."""
    return with_suffix(source_name(session), f" (before rewind to turn {turn})")


def title_line(session: Session, new_id: str, title: str, last_uuid: str, base: dict) -> bytes:
    """The record that names the new session, in its agent's own form."""
    return agent_for(session.agent).title_line(
        session_id=new_id, title=title, parent_uuid=last_uuid, base=base
    )
