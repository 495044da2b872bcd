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

from .chips import chips_text, with_chips_html
from .code import HIGHLIGHT_LIMIT, code_html
from .diffs import DIFF_CHAR_LIMIT, DIFF_LINE_LIMIT, diff_html
from .markdown import MARKDOWN_LIMIT, markdown_html, sanitize
from .text import split_numbered_lines, split_reminders, strip_ansi, truncate

__all__ = [
    "DIFF_CHAR_LIMIT",
    "DIFF_LINE_LIMIT",
    "HIGHLIGHT_LIMIT",
    "MARKDOWN_LIMIT",
    "chips_text",
    "code_html",
    "diff_html",
    "markdown_html",
    "sanitize",
    "split_numbered_lines",
    "split_reminders",
    "strip_ansi",
    "truncate",
    "with_chips_html",
]
