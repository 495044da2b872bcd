"""The line reader: one pass from an offset, into record rows, graph nodes and session facts.

It runs once per line of files of hundreds of MB, so the loop stays lean: the
agent's parser is looked up once, and a row keeps only what the node does not.
It hands the lines over in pieces (`chunks`), each cut just before a prompt, so
the importer can number and store a piece and let it go before reading the next:
what an import holds then does not grow with the file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, BinaryIO

from zlib_ng.zlib_ng import crc32  # zlib's CRC-32, several times faster

from ...conversation import Node, node_from_record
from ...formats import (
    ASSISTANT,
    INVALID,
    PROGRESS,
    PROMPT,
    TITLE,
    USER_OTHER,
    ParsedRecord,
    agent_for,
)
from ...formats.claude.file_history import RECORD_TYPES as FILE_BACKUP_TYPES
from ...formats.common import load
from ...formats.long_lines import long_line, rest_of_line
from ...formats.search_text import SEARCHABLE_KINDS, line_searchable
from ...models import Session
from ..discovery import SessionFile
from ..reading.lines import max_record
from .report import ImportReport
from .rows import Rows

MAX_ERRORS_PER_FILE = 5
NO_TOKENS = (0, 0)
NEVER = 1 << 62  # a line number no file reaches


class FileReader:
    """Streams lines from an offset into row tuples, graph nodes and session facts."""

    def __init__(self, source: SessionFile, session: Session, report: ImportReport) -> None:
        self.source = source
        self.session = session
        self.report = report
        self.nodes: list[Node] = []  # those of the piece read last
        # Lines per piece `chunks` aims at; None: the rest of the file in one piece.
        self.chunk_lines: int | None = None
        self.own_id = source.session_id
        self.foreign_ids = 0
        self.tail_offset = -1
        self.tail: bytes | str = b""  # the last whole line, or the digest of a long one
        self.bytes_end = 0
        self.line_end = 0
        self.invalid = 0
        self.errors_reported = 0
        self.models: list[str] = list(session.models_used or [])
        self.input_tokens = 0
        self.output_tokens = 0
        self.last_message_id = session.last_message_id
        self.cwd = ""
        self.git_branch = ""
        self.title: str | None = None
        self.ai_title: str | None = None
        self.owner_id: str | None = None
        self.forked_from: str | None = None
        self.last_copied_line = -1  # the last record copied from `forked_from`
        self.branched_at: datetime | None = None
        self.file_backups = False  # a file-backup checkpoint record was read

    def read(self, f: BinaryIO, offset: int, first_line: int) -> Rows:
        """Every line from `offset` to the end, in one piece (`nodes`: its nodes)."""
        self.chunk_lines = None
        rows = Rows(first_line)
        for piece in self.chunks(f, offset, first_line):
            rows = piece
        return rows

    def chunks(self, f: BinaryIO, offset: int, first_line: int) -> Iterator[Rows]:
        """The lines from `offset` on, in pieces of about `chunk_lines`; `nodes` is the piece's.

        A piece ends just before a prompt (outside sidechains) once it has
        `chunk_lines` lines, or anyway at four times that: a new turn usually
        continues the active leaf, so the next piece can be numbered from it alone.
        At least one piece (empty for an empty read); only the first can be empty.
        The caller may change `chunk_lines` between pieces.
        """
        rows = Rows(first_line)
        self.nodes = []
        line_no = first_line
        chain = None
        # Looked up once, not per line: this loop runs for every line of every file.
        agent = agent_for(self.source.agent)
        parse_line = agent.parse_line
        if agent.line_chain is not None:
            # A CLI without a uuid chain: the agent links its lines by their order.
            earlier = self._earlier(first_line)
            chain = agent.line_chain(
                first_line, earlier, self.own_id or self.source.path.stem, self._last(first_line)
            )
            link = chain.link
            parse_one = parse_line

            def parse_line(raw: bytes) -> ParsedRecord:
                return link(parse_one(raw), raw)

        # At most a record's limit of each line at once: a longer one is read on in blocks
        # (`_long`), whole in the file and the index's length and CRC, cut in what is parsed.
        limit = max_record()
        lines: Iterable[bytes] = iter(functools.partial(f.readline, limit + 1), b"")
        offsets = None  # a one-document file's records lie where it says, not end to end
        documents = agent.documents
        if documents is not None and not offset and self.source.path.suffix == documents.suffix:
            spans = list(documents.records(f.read()))
            offsets, lines = [at for at, _ in spans], [raw for _, raw in spans]
            whole = spans[0][1]
        note, own_id = self._note, self.own_id
        # The search texts and the usage, from this same read of each line (else the search
        # and usage passes read it again). A CLI whose usage needs the lines before it
        # (Codex) is counted by the usage pass.
        searched = SEARCHABLE_KINDS if self.report.texts else ()
        usage_of = agent.usage_of if self.report.texts and agent.usage_reader is None else None
        texts, usages = rows.texts, rows.usage
        add_node = self.nodes.append
        add_offset, add_length = rows.offsets.append, rows.lengths.append
        add_digest, add_tokens = rows.digests.append, rows.tokens.extend
        add_type, add_subtype, errors = rows.types.append, rows.subtypes.append, rows.errors
        names: dict[str, str] = {}
        foreign = 0
        backups = False
        tail_offset, tail, bytes_end, line_end = self.tail_offset, self.tail, 0, 0
        cut_at, cut_anyway = self._cuts(line_no)
        for raw in lines:
            length = len(raw)
            crc = None
            if offsets is not None:
                offset = offsets[line_no - first_line]
            elif length > limit:
                raw, length, crc, long_digest = self._long(raw, f, limit)
            record = parse_line(raw)
            if line_no >= cut_at and (
                line_no >= cut_anyway or (record.kind == PROMPT and not record.sidechain)
            ):
                self.foreign_ids += foreign
                self.file_backups = self.file_backups or backups
                self.tail_offset, self.tail = tail_offset, tail
                if line_end:
                    self.bytes_end, self.line_end = bytes_end, line_end
                foreign, backups = 0, False
                self._not_prompts(chain, rows.first_line, final=False)
                yield rows
                rows = Rows(line_no)
                self.nodes = []
                add_node = self.nodes.append
                add_offset, add_length = rows.offsets.append, rows.lengths.append
                add_digest, add_tokens = rows.digests.append, rows.tokens.extend
                add_type, add_subtype = rows.types.append, rows.subtypes.append
                errors, texts, usages = rows.errors, rows.texts, rows.usage
                cut_at, cut_anyway = self._cuts(line_no)
            add_tokens(note(record, line_no))
            session_id = record.session_id
            if session_id and own_id and session_id != own_id:
                foreign += 1
            add_node(node_from_record(line_no, record))
            add_offset(offset)
            add_length(length)
            add_digest(crc32(raw) if crc is None else crc)
            raw_type, subtype = record.raw_type, record.subtype
            add_type(names.setdefault(raw_type, raw_type))
            backups = backups or raw_type in FILE_BACKUP_TYPES
            add_subtype(names.setdefault(subtype, subtype))
            if record.error:
                errors[line_no - rows.first_line] = record.error
            kind = record.kind
            data = None
            if usage_of is not None and (
                kind == ASSISTANT or (kind == PROGRESS and b'"agent_progress"' in raw)
            ):
                data = load(raw)
                if isinstance(data, dict) and (usage := usage_of(data)) is not None:
                    usages[line_no - rows.first_line] = usage
            if kind in searched:
                found = line_searchable(agent, raw, kind, record.title, data)
                if found is not None:
                    texts[line_no - rows.first_line] = found
            if raw.endswith(b"\n"):
                # Only whole lines count as imported; a half-written tail is read
                # again next time.
                tail_offset, tail = offset, raw if crc is None else long_digest
                bytes_end, line_end = offset + length, line_no + 1
            offset += length
            line_no += 1
        if offsets is not None and len(offsets) > 1:
            # A document read whole (its first record) is imported whole, newline or not.
            tail_offset, tail, bytes_end, line_end = 0, whole, len(whole), len(offsets)
        self.foreign_ids += foreign
        self.file_backups = self.file_backups or backups
        self.tail_offset, self.tail = tail_offset, tail
        if line_end:
            self.bytes_end, self.line_end = bytes_end, line_end
        self._not_prompts(chain, rows.first_line, final=True)
        yield rows

    def _long(self, first: bytes, f: BinaryIO, limit: int) -> tuple[bytes, int, int, str]:
        """A line past the limit, read on to its end in blocks: (its stand-in, its length,
        its CRC-32 and digest), each of the whole line but the stand-in."""
        rest = () if first.endswith(b"\n") else rest_of_line(f)
        found = long_line(first, rest, limit)
        self.report.cut_lines += 1
        return found.text or b"", found.length, found.crc, found.digest

    def _not_prompts(self, chain: Any, first_line: int, *, final: bool) -> None:
        """The lines the agent's chain learnt later were no prompts (Codex): context."""
        settled = getattr(chain, "settled", None)
        for line in settled(final=final) if settled is not None else ():
            if 0 <= line - first_line < len(self.nodes):
                self.nodes[line - first_line].kind = USER_OTHER

    def _cuts(self, line_no: int) -> tuple[int, int]:
        """The lines from which a piece starting at `line_no` ends before a prompt, and anyway."""
        if self.chunk_lines is None:
            return NEVER, NEVER
        return line_no + self.chunk_lines, line_no + 4 * self.chunk_lines

    def tokens_written(self) -> None:
        """The session row has counted the tokens read so far: count from zero again."""
        self.input_tokens = self.output_tokens = 0

    def _earlier(self, first_line: int) -> Callable[[], Iterable[tuple[str, str, str]]]:
        """The (uuid, parent uuid, kind) of the session's stored lines before `first_line`."""

        def rows() -> Iterable[tuple[str, str, str]]:
            if self.session.pk is None:
                return ()
            stored = self.session.records.filter(line__lt=first_line).order_by("line")
            return stored.values_list("uuid", "parent_uuid", "kind").iterator(chunk_size=5000)

        return rows

    def _last(self, first_line: int) -> Callable[[], str | None]:
        """The stored uuid of the line before `first_line` (an append goes on from it)."""

        def uuid() -> str | None:
            if self.session.pk is None or not first_line:
                return None
            stored = self.session.records.filter(line=first_line - 1)
            return stored.values_list("uuid", flat=True).first() or None

        return uuid

    def _note(self, record: ParsedRecord, line_no: int) -> tuple[int, int]:
        """Collect the session facts of one record; returns the tokens it adds."""
        counted = NO_TOKENS
        if record.dropped:
            self.report.dropped += len(record.dropped)
            for problem in record.dropped:
                self._report(line_no, problem)
        kind = record.kind
        if kind == ASSISTANT:
            if record.model and record.model not in self.models:
                self.models.append(record.model)
            # One streamed message is written as several records sharing its id.
            if not record.message_id or record.message_id != self.last_message_id:
                self.input_tokens += record.input_tokens
                self.output_tokens += record.output_tokens
                counted = (record.input_tokens, record.output_tokens)
            self.last_message_id = record.message_id or ""
        elif kind == INVALID:
            self.invalid += 1
            self._report(line_no, record.error)
            return counted
        elif kind == TITLE and record.title:
            if record.raw_type == "ai-title" or record.subtype == "summary":
                # A title the CLI's model proposed (Gemini CLI's `summary`): the last wins.
                self.ai_title = record.title
            else:
                self.title = record.title
        if record.cwd and not self.cwd:
            self.cwd = record.cwd
        if record.git_branch:
            self.git_branch = record.git_branch
        if record.session_id and not self.owner_id:
            self.owner_id = record.session_id
        if record.forked_from:
            # A branch the CLI made copies its source's records, each saying so.
            self.forked_from = self.forked_from or record.forked_from
            self.last_copied_line = line_no
        elif self.forked_from and self.branched_at is None and record.time is not None:
            self.branched_at = record.time  # the branch's first record of its own
        return counted

    def _report(self, line_no: int, problem: str | None) -> None:
        """Report one problem with its file and line; only the first few of a file."""
        if self.errors_reported < MAX_ERRORS_PER_FILE:
            self.report.errors.append(f"{self.source.path}:{line_no + 1}: {problem}")
            self.report.line_problems += 1
            self.errors_reported += 1
