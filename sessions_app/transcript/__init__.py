"""What the transcript page shows, from a page of raw records (pure Python).

The records arrive in file order with their parsed JSON; the result is a list of
turns, each a prompt followed by items: assistant text, thinking, tool calls
paired with their results, notes. A page is bounded: its texts are cut before
anything renders them, and it ends, inside a turn if need be, once full, saying
where the next page starts. Exports build without limits. Nothing here trusts the
content: templates escape it, and Markdown goes through the sanitiser.

Modules, one rule each: `items` (turns, items, tool calls, and the readings of a
record they need), `limits` (the fixed sizes a page cuts at, and its budget),
`pieces` (what one record adds to a page, and whether it is its turn's prompt, as
the index says), `building` (records to turns, one card per turn, piece by piece,
within the limits), `images` (a record's images, in one order), `whole` ("show all" of
one item, in parts). Every name is re-exported here.
"""

from __future__ import annotations

from .building import build_page, build_turns
from .items import Image, Item, Page, RawRecord, ToolCall, Turn
from .limits import PAGE_LIMITS, Cut, PageLimits, Size
from .whole import PART_CHARS, full_item, item_part

__all__ = [
    "PAGE_LIMITS",
    "PART_CHARS",
    "Cut",
    "Image",
    "Item",
    "Page",
    "PageLimits",
    "RawRecord",
    "Size",
    "ToolCall",
    "Turn",
    "build_page",
    "build_turns",
    "full_item",
    "item_part",
]
