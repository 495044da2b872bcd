"""How a CLI whose older session files are one JSON document each is read (Gemini CLI's
`session-*.json`): the interface's part for such files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple


class DocumentFiles(NamedTuple):
    """One-document session files (`formats.gemini.document`): records are spans of bytes.

    A file whose name ends with `suffix` is read whole: `records(its bytes)` gives the
    (offset, bytes) of each record, one Record row each, the first the whole document.
    `continuation(path)` is the file the CLI goes on in once it resumes the document: while
    that exists, the document is superseded (no session of its own). Nothing writes one: a
    branch or fork of it is a file of the CLI's current shape, each record made one line by
    `as_line` (as the CLI itself converts a document it resumes).
    """

    suffix: str
    records: Callable[[bytes], Iterable[tuple[int, bytes]]]
    continuation: Callable[[Path], Path]
    as_line: Callable[[bytes], bytes]
    # Why a rewind (and its undo) leaves such a file alone (the page says it).
    refusal: str


# What a session file's name may end with, for any agent (Gemini CLI's documents too).
SESSION_SUFFIXES = (".jsonl", ".json")


def session_suffixes(documents: DocumentFiles | None) -> tuple[str, ...]:
    """What the names of an agent's session files end with."""
    return (".jsonl", documents.suffix) if documents is not None else (".jsonl",)


def is_document(documents: DocumentFiles | None, path: Path) -> bool:
    """Whether `path` is one of an agent's one-document session files."""
    return documents is not None and path.suffix == documents.suffix


def superseded(documents: DocumentFiles | None, path: Path) -> bool:
    """Whether `path` is a one-document file the CLI went on from in its continuation."""
    if documents is None or not is_document(documents, path):
        return False
    return os.path.lexists(documents.continuation(path))
