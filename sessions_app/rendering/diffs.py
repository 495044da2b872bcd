"""Diffs of a Write or Edit: a table of hunks with old and new line numbers, bounded in size."""

from __future__ import annotations

import difflib
from html import escape

from django.utils.safestring import SafeString, mark_safe

from .text import clean, cut_at_line

# Bounds the table a single Write or Edit can produce; difflib is quadratic at worst.
DIFF_LINE_LIMIT = 5_000
DIFF_CHAR_LIMIT = 500_000


def _diff_lines(text: str) -> tuple[list[str], bool]:
    """Lines to diff, capped in size; True when something was left out."""
    head, tail = cut_at_line(clean(text), DIFF_CHAR_LIMIT)
    lines = head.split("\n") if head else []
    if head.endswith("\n"):
        lines.pop()  # a final newline ends the last line, it does not start another
    return lines[:DIFF_LINE_LIMIT], bool(tail) or len(lines) > DIFF_LINE_LIMIT


def _hunk_range(start: int, length: int) -> str:
    # The unified-diff convention: an empty range names the line before it.
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _diff_row(kind: str, old: int | str, new: int | str, sign: str, text: str) -> str:
    return (
        f'<tr class="{kind}"><td class="ln">{old}</td><td class="ln">{new}</td>'
        f'<td class="sign">{sign}</td><td class="text">{escape(text, quote=False)}</td></tr>'
    )


def diff_html(old: str, new: str, *, filename: str | None = None, context: int = 3) -> SafeString:
    """A line diff as a table: hunk headers, old and new line numbers, add/del/ctx rows."""
    a, a_cut = _diff_lines(old)
    b, b_cut = _diff_lines(new)
    try:
        context = max(0, int(context))
    except (TypeError, ValueError):
        context = 3
    # autojunk (difflib's default) skips very common lines in long inputs: bounded time.
    matcher = difflib.SequenceMatcher(None, a, b)
    rows = []
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        old_range = _hunk_range(first[1], last[2] - first[1])
        new_range = _hunk_range(first[3], last[4] - first[3])
        rows.append(f'<tr class="hunk"><td colspan="4">@@ -{old_range} +{new_range} @@</td></tr>')
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend(
                    _diff_row("ctx", i + 1, j + 1, "", a[i])
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                )
                continue
            rows.extend(_diff_row("del", i + 1, "", "-", a[i]) for i in range(i1, i2))
            rows.extend(_diff_row("add", "", j + 1, "+", b[j]) for j in range(j1, j2))
    if not rows:
        rows.append('<tr class="hunk"><td colspan="4">(no changes)</td></tr>')
    if a_cut or b_cut:
        rows.append('<tr class="hunk"><td colspan="4">(diff cut short: too long)</td></tr>')
    caption = f"<caption>{escape(clean(filename))}</caption>" if filename else ""
    return mark_safe(f'<table class="diff">{caption}{"".join(rows)}</table>')  # noqa: S308
