"""Codex's history is the order of its lines: a synthetic uuid chain for the graph, pure.

Codex writes no uuid/parentUuid: each line `n` of session `s` is given the uuid `<s>:<n>`
(unique across sessions, as the index expects of a uuid: search and usage take two records
with one uuid for one record copied) and, as its parent, the line before it, so the
conversation graph, the turn function and the pages work unchanged. A
`thread_rolled_back` event (`num_turns`) hangs off the record before the first prompt it
took back: those turns become an abandoned branch, and what follows continues from the
rollback, as `codex resume` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from . import PROMPT, REWIND, ParsedRecord

Earlier = Callable[[], Iterable[tuple[str | None, str | None, str]]]


def line_uuid(line: int, session_id: str = "") -> str:
    """The synthetic uuid of line `line` (0-based) of session `session_id`."""
    return f"{session_id or 'line'}:{line}"


class LineChain:
    """Links the records of one read, from line `first_line` on, into the chain."""

    def __init__(self, first_line: int, earlier: Earlier, session_id: str = "") -> None:
        self.session_id = session_id
        self.line = first_line
        self.previous = line_uuid(first_line - 1, session_id) if first_line else None
        self.earlier = earlier  # (uuid, parent uuid, kind) of the lines before, on demand
        self.parents: dict[str, str | None] = {}
        self.kinds: dict[str, str] = {}
        self.loaded = first_line == 0
        self.model: str | None = None

    def link(self, record: ParsedRecord) -> ParsedRecord:
        """`record`, read from the next line, with its uuid and parent set."""
        uuid = line_uuid(self.line, self.session_id)
        self.line += 1
        parent = self.previous
        if (
            record.kind == REWIND
            and record.text
            and record.text.isascii()
            and record.text.isdigit()
        ):
            parent = self._before_prompts(int(record.text))
        own = self.session_id.lower()
        if record.session_id and own and self.line > 1 and record.session_id.lower() != own:
            # A later `session_meta` of another session: a 0.3x-0.5x fork (or a sub-agent)
            # copied that session's history here, its `session_meta` line included.
            record.forked_from = record.forked_from or record.session_id
        if record.model:
            self.model = record.model
        elif record.input_tokens or record.output_tokens:
            record.model = self.model  # a token count names no model: the turn's
        record.uuid, record.parent_uuid = uuid, parent
        self.parents[uuid] = parent
        self.kinds[uuid] = record.kind
        self.previous = uuid
        return record

    def _before_prompts(self, turns: int) -> str | None:
        """The parent of the `turns`-th prompt back on the chain ending at the previous line."""
        if not self.loaded:
            self.loaded = True
            for uuid, parent, kind in self.earlier():
                if uuid:
                    self.parents.setdefault(uuid, parent)
                    self.kinds.setdefault(uuid, kind)
        at, seen, found = self.previous, 0, self.previous
        steps = 0
        while at is not None and seen < turns and steps < 10_000_000:
            if self.kinds.get(at) == PROMPT:
                seen += 1
                found = self.parents.get(at)
            at = self.parents.get(at)
            steps += 1
        return found
