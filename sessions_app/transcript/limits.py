"""What one transcript page shows at most: texts cut at a fixed size, and a budget per page.

A page must paint fast and stay small whatever a turn holds (a 3 MB tool output,
a 3 MB message, thousands of tool calls), so every text is cut here, before
Markdown, highlighting or a diff sees it, and the page ends once its estimated
HTML reaches the budget; the rest loads on demand ("show all", "more of this
turn"). Exports are downloads: they are built without limits. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Size:
    """At most `chars` characters and `lines` lines of one text."""

    chars: int
    lines: int


@dataclass(frozen=True, slots=True)
class PageLimits:
    """The fixed sizes a page cuts at, and what one page holds at most."""

    output: Size = Size(20_000, 200)  # a tool's output
    tool_input: Size = Size(10_000, 100)  # a command, a call's JSON, each side of an edit
    message: Size = Size(10_000, 200)  # a prompt, assistant text, thinking, a summary (Markdown)
    note: Size = Size(4_000, 50)  # local command output, notices, a raw record's JSON
    items: int = 100  # items (a tool call with its result is one) per page
    records: int = 1_000  # records per page, shown or not (bookkeeping, progress)
    page_bytes: int = 150_000  # estimated HTML of a page's turns


PAGE_LIMITS = PageLimits()
# "Show all" of an edit longer than this shows its input, not a diff: a diff is cut at
# this size (rendering.diffs.DIFF_CHAR_LIMIT), and "show all" must show everything.
WHOLE_DIFF_CHARS = 500_000

# Estimated HTML around an item's texts (a tool call's <details>, ids, links) and a
# turn's (its prompt box and the branch, edit and rewind forms).
ITEM_BYTES = 500
# An image is loaded by its URL (`pages.images`), never inlined: on the page it is one tag.
IMAGE_TAG_BYTES = 250
# The largest image (decoded) served; `BRANCHBOARD_MAX_IMAGE_BYTES` changes it.
IMAGE_LIMIT = 20 * 1024 * 1024
TURN_BYTES = 2_000
DIFF_ROW_BYTES = 110  # a diff's table row: line numbers, sign and cells around the text
# Highlighted code grows ~8x (a <span> per token; past 10x, rendering.code shows it plain);
# Markdown's tags (lists, tables, emphasis) about 3x at worst.
HIGHLIGHT_FACTOR = 8
MARKDOWN_FACTOR = 3
# Tool results whose calls are on the page may take it this far past its budget.
PAIRED_OVERRUN = 1.25
ESCAPES = ("<", ">", "&", '"', "'")  # each becomes an entity of 4 to 6 characters


@dataclass(frozen=True, slots=True)
class Cut:
    """A text shown in part: its whole size, and what else was left out."""

    chars: int
    lines: int
    images: int = 0  # images not shown inline

    @staticmethod
    def with_images(was_cut: Cut | None, shown: str, hidden: int) -> Cut:
        """`was_cut` (or a text shown whole) with `hidden` images left out too."""
        chars, lines = (was_cut.chars, was_cut.lines) if was_cut else (len(shown), 0)
        return Cut(chars=chars, lines=lines, images=hidden)


def cut(text: str, size: Size) -> tuple[str, Cut | None]:
    """`text` cut to `size` (at a line end when one is near), and the whole size if it was cut."""
    limit = min(len(text), size.chars)
    end = -1
    for _ in range(size.lines):
        end = text.find("\n", end + 1, limit)
        if end < 0:
            break
    else:
        if end + 1 < len(text):  # more lines follow than `size` allows: stop at this one's end
            limit = end
    if limit >= len(text):
        return text, None
    if limit == size.chars:
        # A newline in the last fifth keeps whole lines; without one, cut mid-line.
        line_end = text.rfind("\n", limit * 4 // 5, limit)
        limit = line_end if line_end >= 0 else limit
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return text[:limit], Cut(chars=len(text), lines=lines)


def html_bytes(text: str, *, factor: int = 1) -> int:
    """An upper estimate of the HTML a shown text becomes: UTF-8, entities, then `factor`."""
    size = len(text.encode("utf-8", "surrogatepass"))
    size += 5 * sum(text.count(c) for c in ESCAPES)
    return size * factor
