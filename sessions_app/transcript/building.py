"""Records to turns, one piece at a time, each text cut and counted against a page's limits.

A record gives pieces in order (a prompt, each part of an assistant message, each
tool result, a note...); a piece's index within its record names the item it makes,
on the page and in "show all". A page stops before the piece that would overfill
it and says where the next page starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..formats import ASSISTANT, Agent, agent_for
from .items import (
    EDIT_TOOLS,
    SUBAGENT_TOOLS,
    WRITE_TOOLS,
    Image,
    Item,
    Page,
    RawRecord,
    ToolCall,
    Turn,
    as_json,
    edit_of,
    images_of,
    numbered_images,
)
from .limits import (
    DIFF_ROW_BYTES,
    HIGHLIGHT_FACTOR,
    IMAGE_TAG_BYTES,
    ITEM_BYTES,
    MARKDOWN_FACTOR,
    PAIRED_OVERRUN,
    TURN_BYTES,
    Cut,
    PageLimits,
    Size,
    cut,
    html_bytes,
)
from .pieces import is_command, pieces


def build_turns(records: Iterable[RawRecord], agent: str, *, show_all: bool = False) -> list[Turn]:
    """Group records (in file order) into turns with paired tool calls, nothing cut."""
    return build_page(records, agent, show_all=show_all).turns


def build_page(
    records: Iterable[RawRecord],
    agent: str,
    *,
    show_all: bool = False,
    limits: PageLimits | None = None,
    start: tuple[int, int] = (0, 0),
) -> Page:
    """Turns from the records at `start` (line, item index) on, until `limits` fill a page.

    One card per turn: a card opens with the first piece of its turn (a record that
    gives none, such as a rewind marker, opens nothing), and a record of a turn
    already on the page joins that turn's card, wherever it sits in the file.
    """
    builder = _Builder(agent_for(agent), limits)
    start_line, start_index = start
    builder.start_line = start_line
    for rec in records:
        if rec.line < start_line:
            continue
        if limits is not None and builder.records >= limits.records:
            return builder.page(rec, 0)
        builder.records += 1
        if rec.turn != builder.number:
            if builder.full(None):
                return builder.page(rec, 0)
            builder.number = rec.turn
        if builder.agent.replaces_by_id:
            builder.replace_earlier(rec)
        for index, piece in enumerate(pieces(rec, builder.agent, show_all)):
            if rec.line == start_line and index < start_index:
                continue
            if builder.full(piece):
                return builder.page(rec, index)
            builder.add(rec, index, piece)
    return builder.page(None, 0)


class _Builder:
    """Turns of one page as its pieces arrive, each text cut and counted against the limits."""

    def __init__(self, agent: Agent, limits: PageLimits | None) -> None:
        self.agent, self.limits = agent, limits
        self.turns: list[Turn] = []
        self.cards: dict[int | None, Turn] = {}  # the page's card of each turn
        self.number: int | None = None  # the turn of the record being read
        self.current: Turn | None = None
        self.calls: dict[str, ToolCall] = {}
        self.spent = self.items = self.records = self.start_line = 0
        self.reply_lines: dict[str, int] = {}  # a reply's id: the line it was last read from

    def replace_earlier(self, rec: RawRecord) -> None:
        """Drop the items of an earlier record of the reply `rec` records again (Gemini CLI
        writes a reply again under its id as its tool calls end): the last version shows."""
        data = rec.data
        reply_id = data.get("id") if isinstance(data, dict) and rec.kind == ASSISTANT else None
        if not isinstance(reply_id, str) or not rec.active:
            return
        earlier = self.reply_lines.get(reply_id)
        self.reply_lines[reply_id] = rec.line
        turn = self.cards.get(rec.turn)
        if earlier is not None and turn is not None:
            turn.items = [item for item in turn.items if item.line != earlier]

    def full(self, piece: tuple[str, Any] | None) -> bool:
        if self.limits is None or not self.turns:
            return False
        # A result whose call is on this page may overrun the budget a little.
        paired = piece is not None and piece[0] == "result" and piece[1].call_id in self.calls
        times = PAIRED_OVERRUN if paired else 1
        limits = self.limits
        # A piece that would open a card counts the card's own HTML too.
        spent = self.spent + (TURN_BYTES if self.number not in self.cards else 0)
        return spent >= times * limits.page_bytes or self.items >= times * limits.items

    def card(self) -> Turn:
        """The card of the turn being read, opened with its first piece."""
        turn = self.cards.get(self.number)
        if turn is None:
            turn = self.cards[self.number] = Turn(number=self.number)
            self.turns.append(turn)
            self.spent += TURN_BYTES
        self.current = turn
        return turn

    def cut(self, text: str, size: Size, *, factor: int = 1) -> tuple[str, Cut | None]:
        if self.limits is None:
            return text, None
        shown, was_cut = cut(text, size)
        self.spent += html_bytes(shown, factor=factor)
        return shown, was_cut

    def add(self, rec: RawRecord, index: int, piece: tuple[str, Any]) -> None:
        kind, value = piece
        turn, limits = self.card(), self.limits or PageLimits()
        self.items += kind != "result"
        self.spent += ITEM_BYTES
        if kind == "prompt" and turn.prompt_line is None:
            text = self.agent.record_text(rec.data) or rec.text
            turn.prompt, turn.prompt_cut = self.cut(text, limits.message)
            turn.prompt_line, turn.timestamp = rec.line, rec.timestamp
            turn.images, hidden = self._images(images_of(rec.data, self.agent, rec.line))
            if hidden:
                turn.prompt_cut = Cut.with_images(turn.prompt_cut, turn.prompt, hidden)
        elif kind == "prompt":
            text = self.agent.record_text(rec.data) or rec.text
            self._text_item(rec, index, "note", text, limits.note)
        elif kind == "part" and value.kind == "tool":
            call = ToolCall(value.call_id, value.name, value.input or {}, rec.line, index)
            self.calls[call.id] = call
            turn.items.append(Item("tool", rec.line, tool=call, index=index))
            self._tool_input(call, limits.tool_input)
        elif kind == "part":
            self._text_item(rec, index, value.kind, value.text, limits.message, markdown=True)
        elif kind == "result":
            self._result(rec, index, value, limits)
        elif kind in ("summary", "boundary"):
            self._text_item(rec, index, kind, value, limits.message, markdown=True)
        elif kind == "context":
            label, body = value
            self._text_item(rec, index, kind, body, limits.note)
            item = turn.items[-1]
            item.label = label
            item.images, hidden = self._images(images_of(rec.data, self.agent, rec.line))
            if hidden:
                item.cut = Cut.with_images(item.cut, item.text, hidden)
        elif kind == "cut":  # the record was read cut: said where it is shown
            self._text_item(rec, index, "note", value, limits.note)
        elif kind == "note" and not turn.items and is_command(turn.prompt):
            # What a slash command expanded to, sent in the person's name: kept closed.
            self._text_item(rec, index, "expansion", value, limits.message, markdown=True)
        elif kind == "note":
            self._text_item(rec, index, kind, value, limits.note)
        else:
            text, was_cut = self.cut(as_json(value.data), limits.note)
            turn.items.append(
                Item("record", rec.line, text, record=value, index=index, cut=was_cut)
            )

    def _text_item(
        self, rec: RawRecord, index: int, kind: str, text: str, size: Size, markdown: bool = False
    ) -> None:
        factor = 1
        if markdown:
            fenced = "```" in text[: size.chars] or "~~~" in text[: size.chars]
            factor = HIGHLIGHT_FACTOR if fenced else MARKDOWN_FACTOR
        shown, was_cut = self.cut(text, size, factor=factor)
        assert self.current is not None
        self.current.items.append(Item(kind, rec.line, shown, index=index, cut=was_cut))

    def _tool_input(self, call: ToolCall, size: Size) -> None:
        command = call.input.get("command")
        patch, free = call.input.get("patch"), call.input.get("input")
        if isinstance(command, str) and command:
            call.command, call.input_cut = self.cut(command, size)
        elif isinstance(patch, str) and call.name in EDIT_TOOLS:
            call.patch, call.input_cut = self.cut(patch, size)
            self.spent += DIFF_ROW_BYTES * (call.patch.count("\n") + 1)
        elif isinstance(free, str) and len(call.input) == 1:
            # A custom tool's free-form input (a script): shown as written, not as JSON.
            call.code, call.input_cut = self.cut(free, size, factor=HIGHLIGHT_FACTOR)
        elif (edit := edit_of(call)) is not None:
            # Cut in `page`, once the result (a Write's original file) is known; counted now.
            self._count_diff(edit[1], size)
            self._count_diff(edit[2], size)
        elif call.name in SUBAGENT_TOOLS and isinstance(call.input.get("prompt"), str):
            # A subagent's task reads as its prompt, not as JSON with its newlines escaped.
            call.task_prompt, call.input_cut = self.cut(call.input["prompt"], size)
        elif call.input:
            call.input_json, call.input_cut = self.cut(as_json(call.input), size)

    def _count_diff(self, text: str, size: Size) -> None:
        if self.limits is not None:
            shown = cut(text, size)[0]
            self.spent += html_bytes(shown) + DIFF_ROW_BYTES * (shown.count("\n") + 1)

    def _result(self, rec: RawRecord, index: int, outcome: Any, limits: PageLimits) -> None:
        call = self.calls.get(outcome.call_id)
        if call is None:
            # The call sits on an earlier page or was cut off: show the result alone.
            call = ToolCall(outcome.call_id, "tool result", {}, rec.line, index)
            assert self.current is not None
            self.current.items.append(Item("tool", rec.line, tool=call, index=index))
            self.items += 1
        factor = HIGHLIGHT_FACTOR if call.is_listing else 1
        call.result, call.result_cut = self.cut(outcome.text, limits.output, factor=factor)
        call.is_error, call.result_line, call.result_index = outcome.is_error, rec.line, index
        call.exit = outcome.exit
        found = numbered_images(rec.line, rec.data, self.agent, outcome.images)
        call.images, hidden = self._images(found)
        if hidden:
            call.result_cut = Cut.with_images(call.result_cut, call.result, hidden)
        call.result_data = extra = outcome.details
        if isinstance(extra, dict) and isinstance(extra.get("agentId"), str):
            call.agent_id = extra["agentId"]
        if call.name in WRITE_TOOLS and isinstance(extra, dict):
            original = extra.get("originalFile")
            self._count_diff(original if isinstance(original, str) else "", limits.tool_input)

    def _images(self, images: list[Image]) -> tuple[list[Image], int]:
        """The images shown inline, and how many are left for "show all"."""
        if self.limits is None:
            return images, 0
        shown = []
        for image in images:
            # Loaded by URL, not inlined: an image costs the page its <img> tag alone.
            if self.spent < self.limits.page_bytes:
                shown.append(image)
                self.spent += IMAGE_TAG_BYTES
        return shown, len(images) - len(shown)

    def page(self, rec: RawRecord | None, index: int) -> Page:
        """The page as built: edits cut, calls waiting for a later page marked."""
        for turn in self.turns:
            # A card without its prompt goes on with a turn an earlier page began.
            turn.continued = turn.number is not None and turn.prompt_line is None
            for item in turn.items:
                if item.tool is not None:
                    call = item.tool
                    call.later = rec is not None and call.result_line is None
                    self._edit(call)
        if rec is None:
            return Page(self.turns)
        return Page(self.turns, rec.turn, rec.line, index)

    def _edit(self, call: ToolCall) -> None:
        edit = edit_of(call)
        if edit is None or self.limits is None:
            call.edit = edit
            return
        path, old, new = edit
        size = self.limits.tool_input
        (old, old_cut), (new, new_cut) = cut(old, size), cut(new, size)
        call.edit = (path, old, new)
        if old_cut or new_cut:
            whole = edit[1] + edit[2]
            call.input_cut = Cut(chars=len(whole), lines=whole.count("\n") + 2)
