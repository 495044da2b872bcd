"""Which records a branch, fork or rewind keeps: pure rules over the index's rows.

A fork is shaped like the CLI's own branch: the active branch's records up to the
cut, plus bookkeeping that refers only to kept records. A rewind keeps the same,
plus the inline subagent transcripts of kept turns and session-wide bookkeeping.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

import orjson

FORK = "fork"
REWIND = "rewind"

# Bookkeeping that names records it belongs to; copied only if they are kept.
REFERRING_TYPES = frozenset({"file-history-snapshot", "file-history-delta", "summary"})
# Bookkeeping about the whole session, kept by a rewind wherever it sits.
SESSION_LEVEL_TYPES = frozenset(
    {"custom-title", "ai-title", "agent-name", "mode", "permission-mode", "tag"}
)
# Never copied: a stale pointer at a leaf would steer the CLI's resume.
DROPPED_TYPES = frozenset({"last-prompt"})


class Row(NamedTuple):
    """One indexed record, as the copy reads it."""

    line: int
    offset: int
    length: int
    uuid: str
    active: bool
    sidechain: bool
    turn: int | None
    raw_type: str
    digest: int
    # What a fork's read-back needs of a kept row (its place in the graph), read in
    # the same pass as the copy.
    parent_uuid: str = ""
    logical_parent_uuid: str = ""
    kind: str = ""
    timestamp: datetime | str | None = None  # as the database driver hands it back
    text: str = ""
    starts_turn: bool = False


def wanted(row: Row, *, cut: int, mode: str) -> bool:
    """Whether a record survives a cut after turn `cut` (before looking at its bytes)."""
    within = row.turn is None or row.turn <= cut
    if row.uuid and not row.sidechain:
        return row.active and within
    if row.sidechain:
        # Inline subagent transcripts: the CLI never resumes them; a rewind keeps
        # the ones of kept turns, a fork (like the CLI's /branch) drops them.
        return mode == REWIND and within
    if row.raw_type in DROPPED_TYPES:
        return False
    if mode == FORK:
        return row.raw_type in REFERRING_TYPES and within
    return within or row.raw_type in SESSION_LEVEL_TYPES


def refers_to_kept(raw: bytes, kept: set[str]) -> bool:
    """Whether a referring bookkeeping line names only kept records."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(data, dict):
        return False
    # A file-history delta names its prompt's snapshot; its `messageId` is a reply's.
    message = data.get("snapshotMessageId", data.get("messageId"))
    refs = [r for r in (data.get("leafUuid"), message) if isinstance(r, str)]
    return bool(refs) and all(r in kept for r in refs)


def fork_candidate_sql() -> tuple[str, list[str]]:
    """A SQL condition no row a fork keeps fails (`wanted` still decides), and its parameters.

    Inline subagent records and the rest of the bookkeeping are never read.
    """
    types = sorted(REFERRING_TYPES)
    marks = ", ".join(["%s"] * len(types))
    return f"NOT sidechain AND (active OR (uuid = '' AND raw_type IN ({marks})))", types


def needs_reference_check(row: Row) -> bool:
    """Whether a kept row must still pass `refers_to_kept` on its bytes."""
    return not row.uuid and row.raw_type in REFERRING_TYPES
