"""Two directions side by side: the history they share, then each direction.

A direction is a session's active branch, or a branch an in-CLI rewind abandoned
inside its file (`selectors.branches`), so two sessions of a family, a session and
one of its own abandoned branches, or two abandoned branches compare alike. The
split is where they stop holding the same prompts (a fork copies its records with
their uuids, so the shared turns have the same ones). Each side's turns after it
are read from its file: the prompt, the start of the reply, the tools used, the
files an edit or write touched, and the tool calls that failed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..formats import ASSISTANT, TOOL_RESULT, agent_for
from ..models import Session
from ..services.reading.branches import Branch, branch_records
from ..services.reading.records import transcript_records
from .usage import Totals
from .usage.sessions import lines_usage, turn_usage

MAX_TURNS = 200  # turns shown per side after the split
REPLY_CHARS = 300
# Tools that write a file, by agent: Claude Code's and Qwen Code's names.
FILE_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "write_file", "replace", "edit"}
)
PATH_KEYS = ("file_path", "notebook_path", "path", "absolute_path")


@dataclass
class TurnSide:
    number: int
    prompt: str
    reply: str = ""
    tools: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)
    failed: int = 0

    @property
    def tool_list(self) -> list[tuple[str, int]]:
        """(tool, calls) in the order first used (a template cannot walk a Counter)."""
        return list(self.tools.items())


@dataclass
class Side:
    session: Session
    turns: list[TurnSide]
    total_turns: int  # after the split, shown or not
    usage: Totals
    files: dict[str, list[tuple[int, str]]]  # path -> (turn, tool) in order
    failed: int
    branch: Branch | None = None  # an abandoned branch of the session; None: its active one

    @property
    def more(self) -> int:
        return self.total_turns - len(self.turns)


@dataclass
class Comparison:
    a: Side
    b: Side
    split: int  # turns 1..split are the same on both sides: `splits.last_shared_turn`
    shared: list[str]  # their prompts
    files: list[tuple[str, list[tuple[int, str]], list[tuple[int, str]]]]  # path, a's, b's

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.a, self.b

    @property
    def only_a(self) -> list[str]:
        return [path for path, a, b in self.files if a and not b]

    @property
    def only_b(self) -> list[str]:
        return [path for path, a, b in self.files if b and not a]

    @property
    def both(self) -> list[str]:
        return [path for path, a, b in self.files if a and b]


def _starts(session: Session, branch: Branch | None) -> list[tuple[int, str, str]]:
    """(turn, prompt uuid, prompt text) of each turn of the direction, in order."""
    rows = (
        session.records.active().turn_starts().order_by("line").values_list("turn", "uuid", "text")
    )
    seen: set[int] = set()
    out = []
    for turn, uuid, text in rows:
        if turn is not None and turn not in seen:
            seen.add(turn)
            out.append((turn, uuid, text))
    if branch is None:
        return out
    own = session.records.filter(line__in=branch.starts).order_by("line")
    mine = [
        (branch.shared + 1 + i, u, t) for i, (u, t) in enumerate(own.values_list("uuid", "text"))
    ]
    return out[: branch.shared] + mine


def compare(
    a: Session, b: Session, branch_a: Branch | None = None, branch_b: Branch | None = None
) -> Comparison:
    """Compare two directions (active branches, or the abandoned ones given) from their split."""
    starts_a, starts_b = _starts(a, branch_a), _starts(b, branch_b)
    split = 0
    for (_, ua, _), (_, ub, _) in zip(starts_a, starts_b, strict=False):
        if not ua or ua != ub:
            break
        split += 1
    side_a = _side(a, split, len(starts_a), branch_a)
    side_b = _side(b, split, len(starts_b), branch_b)
    paths = list(dict.fromkeys([*side_a.files, *side_b.files]))
    files = [(p, side_a.files.get(p, []), side_b.files.get(p, [])) for p in sorted(paths)]
    return Comparison(side_a, side_b, split, [text for _, _, text in starts_a[:split]], files)


def _records(session: Session, branch: Branch | None, first: int, last: int) -> list:
    if branch is None:
        return transcript_records(session, first_turn=first, last_turn=last)
    return branch_records(session, branch, first_turn=first, last_turn=last)


def _usage_after(session: Session, branch: Branch | None, split: int) -> Totals:
    if branch is not None:
        lines = {line for line, (turn, on) in branch.rows.items() if on and (turn or 0) > split}
        return lines_usage(session, lines)
    usage = Totals()
    for _number, totals in turn_usage(session, first=split + 1):
        usage.merge(totals)
    return usage


def _side(session: Session, split: int, turns: int, branch: Branch | None) -> Side:
    agent = agent_for(session.agent)
    last = min(turns, split + MAX_TURNS)
    shown: dict[int, TurnSide] = {}
    files: dict[str, list[tuple[int, str]]] = {}
    failed = 0
    if last > split:
        for record in _records(session, branch, split + 1, last):
            if record.turn is None or record.sidechain or not isinstance(record.data, dict):
                continue
            turn = shown.get(record.turn)
            if turn is None:
                turn = shown[record.turn] = TurnSide(record.turn, record.text or "")
            if record.kind == ASSISTANT:
                for part in agent.assistant_parts(record.data):
                    if part.kind == "text" and len(turn.reply) < REPLY_CHARS:
                        # Markdown: the parts as paragraphs, cut past a line end when near.
                        whole = (turn.reply + "\n\n" + part.text).strip()
                        turn.reply = _cut_markdown(whole)
                    elif part.kind == "tool":
                        turn.tools[part.name] += 1
                        path = _written_path(part.name, part.input)
                        if path:
                            files.setdefault(path, []).append((record.turn, part.name))
                            if path not in turn.files:
                                turn.files.append(path)
            elif record.kind == TOOL_RESULT:
                bad = sum(1 for outcome in agent.tool_results(record.data) if outcome.is_error)
                turn.failed += bad
                failed += bad
    usage = _usage_after(session, branch, split)
    ordered = sorted(shown.values(), key=lambda t: t.number)
    return Side(session, ordered, turns - split, usage, files, failed, branch)


def _written_path(name: str, arguments: object) -> str:
    if name not in FILE_TOOLS or not isinstance(arguments, dict):
        return ""
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value[:4096]
    return ""


def _cut_markdown(text: str) -> str:
    """`text` cut to about REPLY_CHARS, at a line end when there is one in the last third."""
    if len(text) <= REPLY_CHARS:
        return text
    end = text.rfind("\n", REPLY_CHARS * 2 // 3, REPLY_CHARS)
    return text[: end if end > 0 else REPLY_CHARS].rstrip() + " …"
