"""Untrusted transcript text to safe HTML: Markdown, code listings, diffs, terminal output.

markdown-it-py parses CommonMark (plus tables and strikethrough) with raw HTML off;
Pygments highlights code with CSS classes (no inline styles, so the CSP can forbid
them); nh3 (the Rust `ammonia` sanitiser) then keeps only an allow-list of tags,
attributes, classes and URL schemes. Code and diffs are built from escaped text
only. Every function accepts any input, never raises, and caps its work, so a
hostile or enormous transcript still renders in bounded time as inert markup.

Modules, one rule each: `text` (plain text: cleaned, cut, terminal output and tool
listings), `code` (highlighting), `markdown` (Markdown and the sanitiser's
allow-list), `diffs` (line diffs as tables), `chips` (user text with the CLIs'
markup as labelled chips), `charts` (bar charts as SVG, imported from their
module). Every name of the first five is re-exported here.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chips import chips_text, with_chips_html
    from .code import HIGHLIGHT_LIMIT, code_html
    from .diffs import DIFF_CHAR_LIMIT, DIFF_LINE_LIMIT, diff_html
    from .markdown import MARKDOWN_LIMIT, markdown_html, sanitize
    from .text import first_words, split_numbered_lines, split_reminders, strip_ansi, truncate

# Loaded on first use, not with the package: a command that imports one module of it
# (the lineage's boxes) does not pay for markdown-it, Pygments and nh3 at start-up.
_HOMES = {
    "chips": ("chips_text", "with_chips_html"),
    "code": ("HIGHLIGHT_LIMIT", "code_html"),
    "diffs": ("DIFF_CHAR_LIMIT", "DIFF_LINE_LIMIT", "diff_html"),
    "markdown": ("MARKDOWN_LIMIT", "markdown_html", "sanitize"),
    "text": ("first_words", "split_numbered_lines", "split_reminders", "strip_ansi", "truncate"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "DIFF_CHAR_LIMIT",
    "DIFF_LINE_LIMIT",
    "HIGHLIGHT_LIMIT",
    "MARKDOWN_LIMIT",
    "chips_text",
    "code_html",
    "diff_html",
    "first_words",
    "markdown_html",
    "sanitize",
    "split_numbered_lines",
    "split_reminders",
    "strip_ansi",
    "truncate",
    "with_chips_html",
]
