"""Untrusted text as safe plain text: encodable, no control characters, cut at a line end.

Also the shapes of tool output shown as text: terminal escapes stripped, Claude's
`<system-reminder>` blocks split off, numbered file listings recognised.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.text import Truncator

ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement, erase
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, DCS, SOS, PM, APC: up to BEL or ST
    r"|\x1b[ -/]*[0-~]"  # two-character escapes and charset selection (tput sgr0's ESC ( B)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the 8-bit form of CSI
)
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 but \t \n \r; DEL; C1
SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
NUMBERED_RE = re.compile(r" *(\d{1,9})(?:→|\t)")
# Markdown's marks a one-line preview drops: emphasis (an underscore inside a word stays),
# code ticks, headings, quotes, a link's target (its words stay).
MARKDOWN_MARKS_RE = re.compile(r"[*`#>~]+|(?<!\w)_+|_+(?!\w)|\]\([^)\n]*\)|[\[\]]")
PREVIEW_CHARS = 90
REMINDER_OPEN, REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"


def as_text(value: Any) -> str:
    """Any value as text that can be encoded: None is empty, lone surrogates become U+FFFD."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = str(value)
    # A JSON "\ud800" decodes to a lone surrogate, which would crash UTF-8 encoding later.
    return SURROGATE_RE.sub("\ufffd", value)


def clean(value: Any) -> str:
    """Text with CRLF as LF and control characters other than tab and newline removed."""
    return CONTROL_RE.sub("", as_text(value)).replace("\r\n", "\n").replace("\r", "")


def cut_at_line(text: str, limit: int) -> tuple[str, str]:
    """`text` split at a newline at or before `limit` (or at `limit` when none is near)."""
    if len(text) <= limit:
        return text, ""
    cut = text.rfind("\n", limit // 2, limit)
    cut = cut + 1 if cut >= 0 else limit
    return text[:cut], text[cut:]


def split_reminders(text: str) -> tuple[str, str]:
    """Tool output split into its own text and the `<system-reminder>` blocks Claude appends."""
    text = as_text(text)
    body = text.rstrip()
    while body.endswith(REMINDER_CLOSE):
        start = body.rfind(REMINDER_OPEN)
        # Only a block that starts a line is the harness's; anything else is content.
        if start < 0 or (start and body[start - 1] != "\n"):
            break
        body = body[:start].rstrip()
    if len(body) == len(text.rstrip()):
        return text, ""
    return body, text[len(body) :].strip()


def split_numbered_lines(text: str) -> tuple[int | None, str]:
    """Claude's Read output (`    12→line` or cat -n's `    12<TAB>line`): first number, bare text.

    Returns (None, text) unchanged unless every line carries consecutive numbers; a trailing
    `<system-reminder>` block (not part of the file) is dropped, see `split_reminders`.
    """
    text = as_text(text)
    body, _ = split_reminders(text)
    lines = body.rstrip("\n").split("\n")
    first = expected = None
    stripped = []
    for line in lines:
        match = NUMBERED_RE.match(line)
        # Consecutive numbers tell a listing from tab-separated data that starts with digits.
        if not match or (expected is not None and int(match.group(1)) != expected):
            return None, text
        expected = int(match.group(1)) + 1
        if first is None:
            first = expected - 1
        stripped.append(line[match.end() :])
    return first, "\n".join(stripped)


def _last_overwrite(line: str) -> str:
    # A bare \r returns the cursor: progress bars redraw a line; keep its final state.
    parts = [part for part in line.split("\r") if part]
    return parts[-1] if parts else ""


def strip_ansi(text: str) -> str:
    """Terminal output as plain text: escape sequences and control characters (not \\t \\n) gone."""
    text = CONTROL_RE.sub("", ANSI_RE.sub("", as_text(text))).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_last_overwrite(line) for line in text.split("\n"))
    return text


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` characters, at a line end when one is near; and whether cut."""
    text = as_text(text)
    limit = max(0, limit)
    if len(text) <= limit:
        return text, False
    # A newline at index `limit` still leaves whole lines within the limit.
    cut = text.rfind("\n", limit * 4 // 5, limit + 1)
    return text[: cut if cut >= 0 else limit], True


def first_words(text: str, chars: int = PREVIEW_CHARS) -> str:
    """The start of Markdown text on one line, its marks dropped, cut at a word with "…":
    what a collapsed row shows of what it holds."""
    # Only the start is read: a long text costs no more than a short one.
    words = " ".join(MARKDOWN_MARKS_RE.sub("", strip_ansi(text[: chars * 4])).split())
    return Truncator(words).chars(chars)
