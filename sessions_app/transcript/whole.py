""" "Show all" of one item: the record's piece built again, whole, outside a page's limits,
and shown in parts of PART_CHARS characters, each its own response with a link to the next:
a record of megabytes is never one page of megabytes."""

from __future__ import annotations

from ..formats import agent_for
from .building import _Builder
from .items import Item, RawRecord, as_json
from .limits import WHOLE_DIFF_CHARS
from .pieces import pieces

PART_CHARS = 200_000  # characters of each long text in one part of "show all"
# The texts of an item a part cuts: on the item, then on its tool call.
ITEM_TEXTS = ("text",)
CALL_TEXTS = ("result", "input_json", "command", "code", "patch", "task_prompt")


def full_item(record: RawRecord, agent: str, index: int, *, raw: bool = False) -> Item | None:
    """Item `index` of one record, whole: what "show all" of a cut one loads."""
    if raw:
        return Item("record", record.line, record=record, text=as_json(record.data))
    # On its page the record was shown as part of its branch, whichever branch that was.
    record.active = True
    found = pieces(record, agent_for(agent), show_all=False)
    if not 0 <= index < len(found):
        return None
    builder = _Builder(agent_for(agent), None)
    builder.number = record.turn
    builder.add(record, index, found[index])
    builder.page(None, 0)
    turn = builder.turns[0]
    if turn.prompt_line is not None:
        return Item("prompt", record.line, text=turn.prompt, images=turn.images)
    item = turn.items[0] if turn.items else None
    call = item.tool if item else None
    if call and call.edit and max(map(len, call.edit[1:])) > WHOLE_DIFF_CHARS:
        call.edit, call.input_json = None, as_json(call.input)
    return item


def item_part(item: Item, part: int, size: int = PART_CHARS) -> int:
    """Cut `item` to its part `part` (each long text's characters from `part * size` on, at
    most `size` of them); returns how many parts the item has. Images and a diff go with
    the first part only."""
    texts: list[tuple[object, str]] = [(item, name) for name in ITEM_TEXTS]
    if item.tool is not None:
        texts += [(item.tool, name) for name in CALL_TEXTS]
    parts = 1
    for owner, name in texts:
        value = getattr(owner, name)
        if isinstance(value, str) and len(value) > size:
            parts = max(parts, -(-len(value) // size))
            setattr(owner, name, value[part * size : (part + 1) * size])
    if parts > 1 and item.tool is not None:
        item.tool.edit = None  # its input is shown in parts instead
    if part:
        item.images = []
        if item.tool is not None:
            item.tool.images = []
    return parts
