"""Two sessions of a family side by side: the history they share, then each direction.

The split is where their active branches stop holding the same prompts (a fork
copies its records with their uuids, so the shared turns have the same ones). Each
side's turns after it are read from its file: the prompt, the start of the reply,
the tools used, the files an edit or write touched, and the tool calls that failed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..formats import ASSISTANT, TOOL_RESULT, agent_for
from ..models import Session
from .records import transcript_records
from .usage import Totals, turn_usage

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

    @property
    def more(self) -> int:
        return self.total_turns - len(self.turns)


@dataclass
class Comparison:
    a: Side
    b: Side
    split: int  # turns 1..split are the same on both sides
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


def _starts(session: Session) -> list[tuple[int, str, str]]:
    """(turn, prompt uuid, prompt text) of each turn of the active branch, in order."""
    rows = (
        session.records.active().turn_starts().order_by("line").values_list("turn", "uuid", "text")
    )
    seen: set[int] = set()
    out = []
    for turn, uuid, text in rows:
        if turn is not None and turn not in seen:
            seen.add(turn)
            out.append((turn, uuid, text))
    return out


def compare(a: Session, b: Session) -> Comparison:
    """Compare the active branches of `a` and `b` from where they split."""
    starts_a, starts_b = _starts(a), _starts(b)
    split = 0
    for (_, ua, _), (_, ub, _) in zip(starts_a, starts_b, strict=False):
        if not ua or ua != ub:
            break
        split += 1
    side_a = _side(a, split, len(starts_a))
    side_b = _side(b, split, len(starts_b))
    paths = list(dict.fromkeys([*side_a.files, *side_b.files]))
    files = [(p, side_a.files.get(p, []), side_b.files.get(p, [])) for p in sorted(paths)]
    return Comparison(side_a, side_b, split, [text for _, _, text in starts_a[:split]], files)


def _side(session: Session, split: int, turns: int) -> Side:
    agent = agent_for(session.agent)
    last = min(turns, split + MAX_TURNS)
    shown: dict[int, TurnSide] = {}
    files: dict[str, list[tuple[int, str]]] = {}
    failed = 0
    if last > split:
        for record in transcript_records(session, first_turn=split + 1, last_turn=last):
            if record.turn is None or record.sidechain or not isinstance(record.data, dict):
                continue
            turn = shown.get(record.turn)
            if turn is None:
                turn = shown[record.turn] = TurnSide(record.turn, record.text or "")
            if record.kind == ASSISTANT:
                for part in agent.assistant_parts(record.data):
                    if part.kind == "text" and len(turn.reply) < REPLY_CHARS:
                        turn.reply = (turn.reply + " " + part.text).strip()[:REPLY_CHARS]
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
    usage = Totals()
    for number, totals in turn_usage(session):
        if number > split:
            usage.merge(totals)
    return Side(
        session, sorted(shown.values(), key=lambda t: t.number), turns - split, usage, files, failed
    )


def _written_path(name: str, arguments: object) -> str:
    if name not in FILE_TOOLS or not isinstance(arguments, dict):
        return ""
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value[:4096]
    return ""
