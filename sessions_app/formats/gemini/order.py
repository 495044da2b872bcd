"""Gemini CLI's history is its lines replayed by message id: a synthetic chain, pure.

Gemini CLI writes no parent links. Its replay (`loadConversationRecord`, 0.61) keeps a
map of messages by id: a repeated id replaces the earlier version, `$rewindTo: id` drops
that message and every later one. Here each line gets a uuid and, as its parent, the
line before it, except:
- a message whose id was seen: a sibling of the earlier version (the same parent), so the
  earlier one and what followed it become an abandoned branch (the CLI re-records only the
  last message, so this is its replay);
- `$rewindTo`: hangs off the parent of the message it names (off nothing when the id is
  unknown: the CLI then clears the whole history);
- `{"$set": {"messages": [...]}}` (the CLI replaces its whole list with these, in their
  order): hangs off the last version of the last message it lists, so the chain up from
  it is the history it keeps (a message the list leaves out falls on an abandoned
  branch), and only the ids it lists are known afterwards (a later line with a dropped id
  is a new message, a rewind to one clears everything, as in the CLI). A list naming no
  message read before (the context alone, which a resume writes first) hangs off the
  first line, the session's metadata: none of its messages is a line of its own, so the
  history holds no message. The list is taken to be the chain it
  ends at, as every list the CLI writes is (its history so far, or a cut of it).
A message's first version has its id as uuid (a copy of it is the same message); other
lines `<session id>:<line>`, a repeated version `<id>@<line>`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..kinds import REWIND, ParsedRecord

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
Earlier = Callable[[], Iterable[tuple[str | None, str | None, str]]]
UUID_LIMIT = 64  # Record.uuid


def _usable(message_id: str | None, suffix: str = "") -> bool:
    if not message_id or ":" in message_id or "@" in message_id:
        return False
    return len(message_id) + len(suffix) <= UUID_LIMIT


class MessageChain:
    """Links the records of one read, from line `first_line` on, into the chain."""

    def __init__(
        self,
        first_line: int,
        earlier: Earlier,
        session_id: str = "",
        last: Callable[[], str | None] | None = None,  # Codex's; the loaded rows tell it here
    ) -> None:
        self.session_id = session_id or "gemini"
        self.line = first_line
        self.previous: str | None = None  # on an append: the last stored line's, when loaded
        self.earlier = earlier
        self.parents: dict[str, str | None] = {}
        self.ids: dict[str, str] = {}  # message id -> uuid of its first version
        self.latest: dict[str, str] = {}  # message id -> uuid of its last version
        # The same for every message ever read, a list dropped it or not: a later list
        # may name it again (a resume in the same minute writes `[context]`, then the
        # whole history), and its row is then where the history goes on from.
        self.ever: dict[str, tuple[str, str]] = {}  # message id -> (first, last version)
        self.loaded = first_line == 0

    def _load(self) -> None:
        """The lines before this read (an append): their parents and message ids."""
        self.loaded = True
        for uuid, parent, _kind in self.earlier():
            if not uuid:
                continue
            self.parents.setdefault(uuid, parent or None)
            if ":" not in uuid and "@" not in uuid:
                self.ids.setdefault(uuid, uuid)
                self.latest[uuid] = uuid
                self.ever[uuid] = (uuid, uuid)
            elif "@" in uuid:
                message_id = uuid.rsplit("@", 1)[0]
                self.latest[message_id] = uuid
                self.ever[message_id] = (self.ever.get(message_id, (uuid,))[0], uuid)
            self.previous = uuid  # in line order: the last one is the line before this read

    def link(self, record: ParsedRecord, raw: bytes = b"") -> ParsedRecord:
        """`record`, read from the next line, with its uuid and parent set."""
        if not self.loaded:
            self._load()
        line = self.line
        self.line += 1
        uuid = f"{self.session_id}:{line}"
        parent = self.previous
        message_id = record.message_id
        if record.replaces is not None:
            parent = self._replace(record.replaces)
        elif record.kind == REWIND:
            first = self.ids.get(message_id or "")
            parent = self.parents.get(first) if first else None
        elif message_id and record.raw_type in MESSAGE_TYPES:
            first = self.ids.get(message_id)
            if first is not None:
                parent = self.parents.get(first)
                suffix = f"@{line}"
                uuid = f"{message_id}{suffix}" if _usable(message_id, suffix) else uuid
            elif message_id in self.parents:  # an id a `$set.messages` dropped, again
                suffix = f"@{line}"
                uuid = f"{message_id}{suffix}" if _usable(message_id, suffix) else uuid
                self.ids[message_id] = uuid
            elif _usable(message_id):
                uuid = message_id
                self.ids[message_id] = uuid
            self.latest[message_id] = uuid
            self.ever[message_id] = (self.ever.get(message_id, (uuid,))[0], uuid)
        record.uuid, record.parent_uuid = uuid, parent
        self.parents[uuid] = parent
        self.previous = uuid
        return record

    def _replace(self, kept: tuple[str, ...]) -> str | None:
        """The parent of a `$set.messages` line keeping `kept`; forgets the other ids."""
        known = [m for m in kept if m in self.ever]
        self.ids = {m: self.ids.get(m, self.ever[m][0]) for m in known}
        self.latest = {m: self.ever[m][1] for m in known}
        # A list of none of them (only context the CLI wrote into it): an empty history,
        # the session's first line (its metadata) and nothing after it.
        return self.latest[known[-1]] if known else f"{self.session_id}:0"
