""" "Show all" of one item: the record's piece built again, whole, outside a page's limits."""

from __future__ import annotations

from ..formats import agent_for
from .building import _Builder
from .items import Item, RawRecord, as_json
from .limits import WHOLE_DIFF_CHARS
from .pieces import pieces


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
