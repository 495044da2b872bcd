"""User text with the CLIs' markup (`formats.markup`) as HTML: prose escaped, chips labelled.

A chip is a small labelled `<span>`; what it held (a command's output, a reminder,
a selection) follows in a closed `<details>`; what a slash command expanded to (Claude
Code 1.0.x kept it in the command's record) follows as Markdown, closed, the way a newer
release's expansion record is shown. Every piece is escaped or sanitised here: nothing
of the transcript reaches the page as markup.
"""

from __future__ import annotations

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from ..formats.markup import Chip, read_markup
from .markdown import markdown_html
from .text import strip_ansi

CHIP_DETAIL_CHARS = 20_000  # a chip's detail is cut here; the whole record is one click away
EXPANSION_SUMMARY = "What the command expanded to (sent as the prompt)"
EXPORT_EXPANSION_CHARS = 2_000  # as much of an expansion as a Markdown export quotes


def chip_html(chip: Chip) -> SafeString:
    """One chip, and its detail (closed) when it has one."""
    label = format_html(
        '<span class="chip chip-{}"{}>{}</span>',
        chip.kind,
        format_html(' title="{}"', chip.title) if chip.title else "",
        chip.label,
    )
    if chip.expansion:
        return format_html(
            '{}<details class="expansion"><summary>{}</summary><div class="markdown">{}'
            "</div></details>",
            label,
            EXPANSION_SUMMARY,
            markdown_html(chip.expansion),
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
    """User text for Markdown or plain text: each chip as `[label]`, its detail left out; a
    slash command's expansion quoted after it."""
    marked = read_markup(text or "")
    return "\n".join(
        _chip_text(piece) if isinstance(piece, Chip) else piece for piece in marked.pieces
    )


def _chip_text(chip: Chip) -> str:
    if not chip.expansion:
        return f"[{chip.label}]"
    quoted = "\n".join(
        f"> {line}" if line else ">"
        for line in chip.expansion[:EXPORT_EXPANSION_CHARS].strip().splitlines()
    )
    return f"[{chip.label}]\n\n{quoted}\n"
