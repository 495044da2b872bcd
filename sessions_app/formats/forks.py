"""How a CLI whose fork is a prefix of its source's file writes one (Codex, Gemini CLI): the
interface's part for such forks.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple


class PrefixFork(NamedTuple):
    """How a CLI whose fork is a prefix of its source's file writes one (`formats.codex.writing`).

    The fork is the source's lines before the cut, unchanged, under `meta_line` (the
    source's first line with the new id and where it came from), in a file named
    `file_name(new id, now)` in the folder `folder(now)` of the source's session root.
    """

    # (raw type, subtype) of records that open the next turn before its prompt: left out.
    turn_opening: frozenset[tuple[str, str]]
    # Why a file whose first line is this cannot be forked ("" when it can).
    refusal: Callable[..., str]  # (meta_line, *, source_id) -> str
    meta_line: Callable[..., bytes]  # (meta_line, *, source_id, new_id, kept_lines, now)
    new_id: Callable[[datetime], str]
    folder: Callable[[datetime], str]
    file_name: Callable[[str, datetime], str]
    # Lines of this raw type after the first (a resumed or replaying file's later metadata
    # lines) are copied through `restamp(line, *, new_id)`: the file's own id, nothing else.
    meta_type: str = ""
    restamp: Callable[..., bytes] | None = None
    # Whether the fork goes beside its source (Gemini CLI's project `chats/` folder)
    # instead of `folder(now)`; and which of the source's lines it keeps (None: every one;
    # Gemini CLI: not the `$set` lines naming the source's id or title).
    beside_source: bool = False
    keeps: Callable[[bytes], bool] | None = None
