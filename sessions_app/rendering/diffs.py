"""Diffs of a Write or Edit: a table of hunks with old and new line numbers, bounded in size."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
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


PATCH_FILE_RE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
PATCH_MOVE_RE = re.compile(r"^\*\*\* Move to: (.+)$")
PATCH_ACTIONS = {"Add": "new file", "Update": "changed", "Delete": "deleted"}
# apply_patch hunks carry no line numbers: each is counted from its own first line.
PATCH_NUMBERS = "apply_patch names no line numbers: each hunk counts its lines from 1"


@dataclass
class _PatchFile:
    path: str
    action: str
    moved_to: str = ""
    hunks: list[tuple[str, list[str]]] = field(default_factory=list)


def patch_files(patch: str) -> list[_PatchFile]:
    """An `apply_patch` patch read as its files, each with its `@@` hunks in order."""
    files: list[_PatchFile] = []
    lines = clean(patch)[:DIFF_CHAR_LIMIT].split("\n")[:DIFF_LINE_LIMIT]
    for line in lines:
        found = PATCH_FILE_RE.match(line)
        if found:
            files.append(_PatchFile(found.group(2).strip(), PATCH_ACTIONS[found.group(1)]))
            continue
        if not files:
            continue  # "*** Begin Patch" and anything before the first file
        current = files[-1]
        moved = PATCH_MOVE_RE.match(line)
        if moved:
            current.moved_to = moved.group(1).strip()
        elif line.startswith("@@"):
            current.hunks.append((line, []))
        elif line.startswith("***"):
            continue  # "*** End of File", "*** End Patch"
        elif line[:1] in ("+", "-", " ") or (line == "" and current.hunks):
            if not current.hunks:
                current.hunks.append(("", []))  # an added file, or a hunk with no header
            current.hunks[-1][1].append(line)
    return files


def patch_html(patch: str) -> SafeString:
    """An `apply_patch` patch as one diff table per file, each hunk with its own numbers."""
    tables = []
    for file in patch_files(patch):
        action = f"moved to {file.moved_to}" if file.moved_to else file.action
        rows = []
        for header, lines in file.hunks:
            while lines and lines[-1] == "":
                lines.pop()  # the newline that ends the patch
            if header or len(file.hunks) > 1:
                rows.append(f'<tr class="hunk"><td colspan="4">{escape(header or "@@")}</td></tr>')
            old = new = 0
            for line in lines:
                sign, text = line[:1], line[1:]
                if sign == "-":
                    old += 1
                    rows.append(_diff_row("del", old, "", "-", text))
                elif sign == "+":
                    new += 1
                    rows.append(_diff_row("add", "", new, "+", text))
                else:
                    old, new = old + 1, new + 1
                    rows.append(_diff_row("ctx", old, new, "", text))
        if not rows:
            rows.append(f'<tr class="hunk"><td colspan="4">({escape(action)})</td></tr>')
        caption = f"<caption>{escape(file.path)} ({escape(action)})</caption>"
        tables.append(
            f'<table class="diff" title="{PATCH_NUMBERS}">{caption}{"".join(rows)}</table>'
        )
    if not tables:
        return mark_safe(f'<pre class="input">{escape(patch)}</pre>')  # noqa: S308
    return mark_safe("".join(tables))  # noqa: S308 (built from escaped text)
