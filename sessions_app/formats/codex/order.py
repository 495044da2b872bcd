"""Codex's history is the order of its lines: a synthetic uuid chain for the graph, pure.

Codex writes no uuid/parentUuid: each line is given as uuid a hash chain, `cx-` and the
digest of the uuid of the line before it and the line's own bytes (`line_identity`), and,
as its parent, the line before it, so the conversation graph, the turn function and the
pages work unchanged. A uuid so names the line's bytes at its place in the history: a copy
of the first lines (the dashboard's forks and rewind backups) gives its lines the source's
uuids, as Claude Code's copies keep theirs (search, compare, usage and the undone-rewind
check take two records with one uuid for one record copied), and two sessions share one
only where every line before it is the same. A `session_meta` line is hashed without what
a copy restamps (the thread's id, where it was forked from, when the line was written):
the fork's first line names the fork, yet the lines after it keep their uuids. A
`thread_rolled_back` event (`num_turns`) hangs off the record before the first prompt it
took back: those turns become an abandoned branch, and what follows continues from the
rollback, as `codex resume` does.

Where a file has `event_msg` `user_message` events (the prompts Codex showed as typed), a
user message is a prompt only when such an event follows it with its text: Codex injects
more kinds of context than any list of prefixes can know (`<recommended_plugins>`). The
event follows its message, so the messages it does not confirm are told afterwards
(`not_prompts`: their lines, for the reader to mark as context). Files without such events
(0.169 writes none) keep the prefix rule.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..kinds import PROMPT, REWIND, USER_OTHER, ParsedRecord

Earlier = Callable[[], Iterable[tuple[str | None, str | None, str]]]
# A pasted image's markers, which the item holds as text parts and the event leaves out.
IMAGE_TAG = re.compile(r"</?image\b[^>]*>")


def prompt_key(text: str | None) -> str:
    """A prompt's text as a message and its event both give it: no image markers, whitespace
    collapsed."""
    return " ".join(IMAGE_TAG.sub(" ", text or "").split())


UUID_PREFIX = "cx-"
# What a copy of a `session_meta` line changes (`writing.fork_meta_line`, `later_meta_line`).
RESTAMPED = ("id", "session_id", "forked_from_id", "forked_from_ordinal_exclusive")


def _meta_bytes(raw: bytes) -> bytes:
    """A `session_meta` line as every copy of it reads: the restamped fields left out."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    if not isinstance(data, dict):
        return raw
    data.pop("timestamp", None)  # when the line was written: a fork's is its own
    payload = data.get("payload")
    if isinstance(payload, dict):
        inner = payload.get("meta")
        meta: dict[str, Any] = inner if isinstance(inner, dict) else payload
        for key in RESTAMPED:
            meta.pop(key, None)
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def line_identity(previous: str | None, raw: bytes, *, meta: bool = False) -> str:
    """The uuid of a line: the digest of the uuid before it and its bytes (`meta`: a
    `session_meta` line, hashed without what a copy restamps)."""
    body = raw.rstrip(b"\r\n")
    digest = hashlib.blake2b(digest_size=16)
    digest.update((previous or "").encode())
    digest.update(b"\n")
    digest.update(_meta_bytes(body) if meta else body)
    return UUID_PREFIX + digest.hexdigest()


class LineChain:
    """Links the records of one read, from line `first_line` on, into the chain."""

    def __init__(
        self,
        first_line: int,
        earlier: Earlier,
        session_id: str = "",
        last: Callable[[], str | None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.line = first_line
        # An append goes on from the stored uuid of the line before it (`last`, one row).
        self.previous: str | None = None
        if first_line and last is not None:
            self.previous = last()
        self.earlier = earlier  # (uuid, parent uuid, kind) of the lines before, on demand
        self.parents: dict[str, str | None] = {}
        self.kinds: dict[str, str] = {}
        self.loaded = first_line == 0
        self.model: str | None = None
        # (line, uuid, key) of the prompts not confirmed yet
        self.candidates: list[tuple[int, str, str]] = []
        self.not_prompts: list[int] = []  # lines read as prompts that an event showed are not
        self.derived = False  # the lines read hold `user_message` events

    def link(self, record: ParsedRecord, raw: bytes = b"") -> ParsedRecord:
        """`record`, read from the next line (`raw`), with its uuid and parent set."""
        uuid = line_identity(self.previous, raw, meta=record.raw_type == "session_meta")
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
        if record.kind == PROMPT and record.raw_type == "response_item":
            self.candidates.append((self.line - 1, uuid, prompt_key(record.text)))
        elif record.raw_type == "event_msg" and record.subtype == "user_message":
            self._confirm(prompt_key(record.text))
        if record.model:
            self.model = record.model
        elif record.input_tokens or record.output_tokens:
            record.model = self.model  # a token count names no model: the turn's
        record.uuid, record.parent_uuid = uuid, parent
        self.parents[uuid] = parent
        self.kinds[uuid] = record.kind
        self.previous = uuid
        return record

    def _confirm(self, key: str) -> None:
        """A `user_message` event: the latest message with its text is the prompt, the ones
        before it were context. An event that matches none changes nothing."""
        self.derived = True
        for k in range(len(self.candidates) - 1, -1, -1):
            if self.candidates[k][2] == key:
                for line, uuid, _ in self.candidates[:k]:
                    self.not_prompts.append(line)
                    self.kinds[uuid] = USER_OTHER
                break
        self.candidates.clear()

    def settled(self, *, final: bool) -> list[int]:
        """The lines read as prompts that are not (told once); `final`: the read ends here,
        so a message no event confirmed in a file with events is context too."""
        if final and self.derived:
            for line, _, _ in self.candidates:
                self.not_prompts.append(line)
            self.candidates.clear()
        lines, self.not_prompts = self.not_prompts, []
        return lines

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
