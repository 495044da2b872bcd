"""User text with the CLIs' markup (`formats.markup`) as HTML: prose escaped, chips labelled.

A chip is a small labelled `<span>`; what it held (a command's output, a reminder,
a selection) follows in a closed `<details>`. Every piece is escaped here: nothing of
the transcript reaches the page as markup.
"""

from __future__ import annotations

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from ..formats.markup import Chip, read_markup
from .text import strip_ansi

CHIP_DETAIL_CHARS = 20_000  # a chip's detail is cut here; the whole record is one click away


def chip_html(chip: Chip) -> SafeString:
    """One chip, and its detail (closed) when it has one."""
    label = format_html(
        '<span class="chip chip-{}"{}>{}</span>',
        chip.kind,
        format_html(' title="{}"', chip.title) if chip.title else "",
        chip.label,
    )
    if not chip.detail:
        return label
    detail = strip_ansi(chip.detail)
    if len(detail) > CHIP_DETAIL_CHARS:
        detail = detail[:CHIP_DETAIL_CHARS] + "\n…"
    return format_html(
        '<details class="chip-detail"><summary>{}</summary><pre class="output">{}</pre></details>',
        label,
        detail,
    )


def with_chips_html(text: str) -> SafeString:
    """User text as HTML: its prose with line breaks kept, each block of markup a chip."""
    marked = read_markup(text or "")
    parts: list[str] = []
    for piece in marked.pieces:
        if isinstance(piece, Chip):
            parts.append(chip_html(piece))
        else:
            parts.append(escape(piece).replace("\n", "<br>"))
    return mark_safe("".join(parts))  # noqa: S308 (every piece escaped above)


def chips_text(text: str) -> str:
    """User text for Markdown or plain text: each chip as `[label]`, its detail left out."""
    marked = read_markup(text or "")
    return "\n".join(
        f"[{piece.label}]" if isinstance(piece, Chip) else piece for piece in marked.pieces
    )
