"""Reading a written fork back from its temporary file, against the index rows it will get.

A plain fork (see `Written`) is read back on its bytes (`readback.plain`). Any other
fork is read back as follows.

Every kept line was copied from a source record checked against the index, so the
fork's index is the source's rows renumbered. Before that is believed, the file is
read back: each line has the length and CRC-32 the new index will hold, decodes
(msgspec, naming only the fields checked) as a JSON object of the new session with
the uuid, parents, type and sidechain flag of its source row, and each turn's
prompt line parses as the intended prompt. The turn function then runs over the
rows' graph, as a fresh import of the file would, and must give the source's turns
and active branch. What this cheap check cannot vouch for raises `Unproven`, and
the caller indexes the file the slow way (a full import), which decides.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from zlib_ng.zlib_ng import crc32

from ....conversation import Analysis, Node, analyse, node_from_record
from ....formats import ASSISTANT, COMMAND, PROMPT, ParsedRecord, agent_for
from ....models import Session
from ...errors import WriteCheckFailed
from ...importing.plan import HEAD_BYTES
from ..copying import rows
from ..kept import Unproven, Written
from .plain import ReadBack, read_back_plain


class _Line(msgspec.Struct):
    """The fields of a line the read-back checks; msgspec skips the rest (still validated)."""

    sessionId: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    type: str | None = None
    isSidechain: bool | None = None
    cwd: str | None = None
    gitBranch: str | None = None


_decode = msgspec.json.Decoder(_Line).decode


def read_back(
    session: Session,
    temp: Path,
    written: Written,
    *,
    new_id: str,
    title_line: bytes,
    turns: int,
    prompts: list[str],
    counted: tuple[bool, bool] | None = None,
    plain: bool = True,
) -> ReadBack:
    """Read the temporary file back against the rows it will get; `Unproven` when in doubt.

    `counted` (`recounting`'s answer): on the bytes only, reading no database (in a thread
    of its own), `Unproven` where the graph would be needed. `plain=False`: not on the
    bytes (they could not vouch for the file).
    """
    if written.plain and plain:
        try:
            return read_back_plain(
                session, temp, written, new_id=new_id, title_line=title_line, turns=turns,
                prompts=prompts, counted=counted,
            )  # fmt: skip
        except Unproven:
            if counted is not None:
                raise
    elif counted is not None:
        raise Unproven("not a plain fork")
    return read_back_graph(
        session, temp, written, new_id=new_id, title_line=title_line, turns=turns, prompts=prompts
    )


def read_back_graph(
    session: Session,
    temp: Path,
    written: Written,
    *,
    new_id: str,
    title_line: bytes,
    turns: int,
    prompts: list[str],
) -> ReadBack:
    """The read-back of a fork that is not plain, or not proven so on its bytes."""
    if not written.nodes:
        written.load_graph(rows(session, fork_only=not written.off_branch))
    agent = agent_for(session.agent)
    # The kept rows' nodes were taken in the copy's own pass over the index.
    nodes, facts, kept_assistants = list(written.nodes), written.facts, written.assistants
    all_assistants = session.records.filter(kind=ASSISTANT).count()
    # Token counts and models are per message: with every assistant record kept they
    # are the source's; otherwise the kept assistant lines are parsed to count them.
    recount = kept_assistants != all_assistants
    tokens: list[tuple[int, int, int]] = []
    models: list[str] = []
    last_message_id = ""
    cwd_at: int | None = None
    branch_at: list[int] = []
    title = agent.parse_line(title_line)
    count = len(nodes)
    k = -1
    with temp.open("rb", buffering=1 << 20) as f:
        for k, raw in enumerate(f):
            if k == count:
                if raw != title_line:
                    raise WriteCheckFailed(f"{temp}: the title line did not read back as written")
                continue
            if k > count or len(raw) != written.length[k] or crc32(raw) != written.digest[k]:
                raise WriteCheckFailed(f"{temp}: line {k + 1} did not read back as written")
            try:
                line = _decode(raw)
            except msgspec.DecodeError:
                raise Unproven(f"line {k + 1} is not a plain JSON object") from None
            node = nodes[k]
            raw_type, _turn, _active, start = facts[k]
            if (
                (line.sessionId is not None and line.sessionId != new_id)
                or (line.uuid or None) != node.uuid
                or (line.parentUuid or None) != node.parent_uuid
                or (line.logicalParentUuid or None) != node.logical_parent_uuid
                or (line.type or "") != raw_type
                or (line.isSidechain is True) != node.sidechain
            ):
                raise Unproven(f"line {k + 1} is not its source record in the new session")
            if line.cwd and cwd_at is None:
                cwd_at = k
            if line.gitBranch:
                branch_at.append(k)
            record: ParsedRecord | None = None
            if start:
                record = agent.parse_line(raw)
                if record.kind not in (PROMPT, COMMAND) or record.text != node.text:
                    raise WriteCheckFailed(
                        f"{temp}: the prompt on line {k + 1} is not the intended one"
                    )
            if recount and node.kind == ASSISTANT:
                record = record or agent.parse_line(raw)
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
    nodes.append(node_from_record(count, title))
    analysis = analyse(nodes, session.agent)
    _check_graph(temp, nodes, facts, analysis, turns=turns, prompts=prompts)
    found = ReadBack(
        nodes,
        analysis,
        tokens if recount else None,
        models if recount else None,
        last_message_id if recount else None,
    )
    found.title_line, found.title_record = title_line, title
    found.cwd, found.git_branch = _cwd_and_branch(
        temp, written, agent.parse_line, cwd_at, branch_at, title
    )
    with temp.open("rb") as f:
        found.head = f.read(HEAD_BYTES)
    found.line_count = len(nodes)
    return found


def _check_graph(
    temp: Path,
    nodes: list[Node],
    facts: list[tuple],
    analysis: Analysis,
    *,
    turns: int,
    prompts: list[str],
) -> None:
    """The turn function over the new graph gives the source's turns, whole and intended."""
    problems = []
    if analysis.turn_count != turns:
        problems.append(f"{analysis.turn_count} turn(s) instead of {turns}")
    texts = [nodes[i].text or "" for i in analysis.prompt_lines]
    if analysis.turn_count == turns and texts != prompts:
        problems.append("the prompts are not the intended ones")
    off_branch = sum(
        1
        for n, on in zip(nodes, analysis.active, strict=True)
        if n.uuid and not n.sidechain and not on
    )
    if off_branch or analysis.abandoned:
        problems.append(f"the chain of records is broken ({off_branch} off the branch)")
    if problems:
        raise WriteCheckFailed(
            f"{temp}: the written file did not read back as intended "
            f"({'; '.join(problems)}); nothing was replaced"
        )
    starts = set(analysis.prompt_lines)
    for k, (_raw_type, turn, active, start) in enumerate(facts):
        if analysis.turn[k] != turn or analysis.active[k] != active or (k in starts) != start:
            raise Unproven(f"line {k + 1} sits elsewhere in the new graph than in its source")


def _cwd_and_branch(
    temp: Path,
    written: Written,
    parse_line,
    cwd_at: int | None,
    branch_at: list[int],
    title: ParsedRecord,
) -> tuple[str, str]:
    """The first cwd and the last git branch the reader would take, from those lines alone."""
    offsets = [0]
    for n in written.length:
        offsets.append(offsets[-1] + n)

    def parsed(k: int, f) -> ParsedRecord:
        f.seek(offsets[k])
        return parse_line(f.read(written.length[k]))

    cwd = ""
    branch = title.git_branch or ""
    with temp.open("rb") as f:
        for k in range(cwd_at if cwd_at is not None else len(written.length), len(written.length)):
            record = parsed(k, f)
            if record.cwd:
                cwd = record.cwd
                break
        if not cwd:
            cwd = title.cwd or ""
        for k in reversed(branch_at if not branch else []):
            branch = parsed(k, f).git_branch or ""
            if branch:
                break
    return cwd, branch
