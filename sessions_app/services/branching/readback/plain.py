"""A fork read back on its bytes, and what any read-back finds (`ReadBack`).

A plain fork (see `Written`) is read back on its bytes: each line has the length
and CRC-32 the new index will hold, and with its new id masked (the source id put
back, `forkedFrom` taken off) it is the source line whose CRC-32 the import took,
so it parses as that record in the new session; the kept records are one chain
whose prompts are the intended ones, so a fresh import numbers them as the source
did. Nothing is decoded but the title line, the lines that say the session's first
cwd and last git branch, and (when some are left out) the assistant lines whose
tokens and models are counted again. What it cannot vouch for raises `Unproven`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zlib_ng.zlib_ng import crc32

from ....conversation import Analysis, Node, node_from_record
from ....formats import ASSISTANT, COMMAND, PROMPT, ParsedRecord, agent_for
from ....formats.writing import UNCHANGED, forked_member, id_member
from ....models import Session
from ...errors import WriteCheckFailed
from ...importing.plan import HEAD_BYTES
from ..kept import Unproven, Written


@dataclass
class ReadBack:
    """What the read-back found: the new file's graph, turns and session facts."""

    nodes: list[Node]
    analysis: Analysis
    tokens: list[tuple[int, int, int]] | None  # (new line, in, out) where they differ
    models: list[str] | None  # None: the source's
    last_message_id: str | None  # None: the source's
    title_line: bytes = b""
    title_record: ParsedRecord = field(default_factory=lambda: ParsedRecord(kind=""))
    head: bytes = b""
    cwd: str = ""
    git_branch: str = ""
    line_count: int = 0  # lines in the new file, the title's included

    first_text: str | None = None  # a plain read-back's first prompt (it keeps no nodes)
    plain: bool = False  # read back on bytes: the session's times come from its rows

    @property
    def first_prompt(self) -> str | None:
        """The first turn's prompt text, as the index keeps it."""
        if self.first_text is not None:
            return self.first_text
        lines = self.analysis.prompt_lines
        return self.nodes[lines[0]].text if lines else None

    @property
    def title_digest(self) -> int:
        """The CRC-32 of the title line, as the index keeps it."""
        return crc32(self.title_line)

    def retitle(self, line: bytes, record: ParsedRecord) -> None:
        """The title line was written again (another fork took the title meanwhile)."""
        old = self.nodes[-1]
        self.nodes[-1] = node_from_record(old.line, record)
        if self.analysis.leaf_uuid is not None and self.analysis.leaf_uuid == old.uuid:
            self.analysis.leaf_uuid = record.uuid
        self.title_line, self.title_record = line, record


def read_back_plain(
    session: Session,
    temp: Path,
    written: Written,
    *,
    new_id: str,
    title_line: bytes,
    turns: int,
    prompts: list[str],
    counted: tuple[bool, bool] | None = None,
) -> ReadBack:
    """The plain fork's read-back, on bytes (see the module docstring).

    `counted`: `recounting`'s answer, asked beforehand (then the read-back reads no
    database, and may run in a thread of its own).
    """
    agent = agent_for(session.agent)
    count = len(written.src)
    uuids = {u for u in written.uuids if u}
    if len(uuids) != sum(1 for u in written.uuids if u) or written.root_parent in uuids:
        raise Unproven("the kept records are not one chain")
    if written.local_command:
        raise Unproven("the last record is a slash command no local output answers here")
    title = agent.parse_line(title_line)
    title_node = node_from_record(count, title)
    if title_node.kind in (PROMPT, COMMAND) or (
        title_node.uuid
        and (title_node.uuid in uuids or (title_node.parent_uuid or "") != written.last_uuid)
    ):
        raise Unproven("the title record does not end the chain")
    if written.turns != turns or written.prompt_texts != prompts:
        raise WriteCheckFailed(
            f"{temp}: the written file did not read back as intended "
            f"({written.turns} turn(s) instead of {turns}, or not the intended prompts); "
            "nothing was replaced"
        )
    source_id = str(session.session_id)
    old_needle, new_needle = id_member(source_id), id_member(new_id)
    size = len(new_needle)
    recount, prefix = counted if counted is not None else recounting(session, written)
    last_assistant = max((k for k, a in enumerate(written.assistant) if a), default=-1)
    wanted_models = set(session.models_used or [])
    tokens: list[tuple[int, int, int]] = []
    models: list[str] = []
    last_message_id = ""
    lengths, digests, ats = written.length, written.digest, written.at
    k = -1
    with temp.open("rb", buffering=1 << 20) as f:
        for k, raw in enumerate(f):
            if k == count:
                if raw != title_line:
                    raise WriteCheckFailed(f"{temp}: the title line did not read back as written")
                continue
            n = len(raw)
            if k > count or n != lengths[k] or crc32(raw) != digests[k]:
                raise WriteCheckFailed(f"{temp}: line {k + 1} did not read back as written")
            # The line with its new id masked is its source line, as the import read it.
            at, uuid = ats[k], written.uuids[k]
            body = n - 1  # the copy ends each line with its source's newline, or adds one
            if at == UNCHANGED:
                suffix = b""
                crc = crc32(memoryview(raw)[:body])
            else:
                suffix = forked_member(source_id, uuid) if uuid else b"}"
                if not (
                    raw.startswith(new_needle, at)
                    and raw.endswith(suffix, 0, body)
                    and at + size <= body - len(suffix)
                ):
                    raise Unproven(f"line {k + 1} is not its source record restamped")
                with memoryview(raw) as view:
                    crc = crc32(view[:at])
                    crc = crc32(old_needle, crc)
                    crc = crc32(view[at + size : body - len(suffix)], crc)
                    crc = crc32(b"}", crc)
            source_length = body - len(suffix) + (1 if suffix else 0)
            if written.source_length[k] == source_length + 1:
                crc = crc32(b"\n", crc)
            elif written.source_length[k] != source_length:
                raise Unproven(f"line {k + 1} is not its source record restamped")
            if crc != written.source_digest[k]:
                raise Unproven(f"line {k + 1} is not its source record restamped")
            if not (recount and written.assistant[k]):
                continue
            if prefix:
                if k == last_assistant or len(models) < len(wanted_models):
                    record = agent.parse_line(raw)
                    last_message_id = record.message_id or ""
                    if record.model and record.model not in models:
                        models.append(record.model)
                continue
            record = agent.parse_line(raw)
            # The importer's rule: a message streamed as several records counts once.
            if not record.message_id or record.message_id != last_message_id:
                tokens.append((k, record.input_tokens, record.output_tokens))
            else:
                tokens.append((k, 0, 0))
            last_message_id = record.message_id or ""
            if record.model and record.model not in models:
                models.append(record.model)
    if k != count:
        raise WriteCheckFailed(f"{temp}: {k + 1} lines read back instead of {count + 1}")
    turn = [*written.turn, written.turns or None]
    active = [bool(u) for u in written.uuids]
    active.append(bool(title_node.uuid))
    leaf = title_node.uuid or written.last_uuid or None
    analysis = Analysis(turn, active, written.turns, leaf, list(written.prompt_lines), [])
    found = ReadBack(
        [title_node],
        analysis,
        tokens if recount and not prefix else None,
        models if recount else None,
        last_message_id if recount else None,
    )
    found.title_line, found.title_record = title_line, title
    found.line_count = count + 1
    found.first_text = written.prompt_texts[0] if written.prompt_texts else None
    found.plain = True
    found.cwd, found.git_branch = _cwd_and_branch_plain(temp, written, agent.parse_line, title)
    with temp.open("rb") as f:
        found.head = f.read(HEAD_BYTES)
    return found


def recounting(session: Session, written: Written) -> tuple[bool, bool]:
    """Whether the kept assistant lines' tokens are counted again (some are left out), and
    whether only some of them are (`prefix`).

    Kept assistant records that are all of the source's up to the last kept one count
    as they did there (the importer's rule runs in file order): their rows' tokens
    stand, and only the lines that name a model not yet seen, and the last, are parsed.
    """
    recount = written.assistants != session.records.filter(kind=ASSISTANT).count()
    last_assistant = max((k for k, a in enumerate(written.assistant) if a), default=-1)
    prefix = (
        recount
        and last_assistant >= 0
        and session.records.filter(kind=ASSISTANT, line__lte=written.src[last_assistant]).count()
        == written.assistants
    )
    return recount, prefix


def _cwd_and_branch_plain(
    temp: Path, written: Written, parse_line, title: ParsedRecord
) -> tuple[str, str]:
    """The first cwd and the last git branch the reader would take, parsing only lines that
    name them (first cwd from the top, last branch from the bottom)."""
    offsets = [0]
    for n in written.length:
        offsets.append(offsets[-1] + n)
    count = len(written.length)
    cwd, branch = "", title.git_branch or ""
    with temp.open("rb") as f:

        def line(k: int) -> bytes:
            f.seek(offsets[k])
            return f.read(written.length[k])

        for k in range(count):
            raw = line(k)
            # A key spelled with an escape is found by parsing too.
            named = b'"cwd"' in raw or b"\\u" in raw
            if named and (found := parse_line(raw).cwd):
                cwd = found
                break
        cwd = cwd or title.cwd or ""
        for k in range(count - 1, -1, -1) if not branch else ():
            raw = line(k)
            named = b'"gitBranch"' in raw or b"\\u" in raw
            if named and (found := parse_line(raw).git_branch):
                branch = found
                break
    return cwd, branch
