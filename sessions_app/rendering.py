"""Untrusted transcript text to safe HTML: Markdown, code listings, diffs, terminal output.

markdown-it-py parses CommonMark (plus tables and strikethrough) with raw HTML off;
Pygments highlights code with CSS classes (no inline styles, so the CSP can forbid
them); nh3 (the Rust `ammonia` sanitiser) then keeps only an allow-list of tags,
attributes, classes and URL schemes. Code and diffs are built from escaped text
only. Every function accepts any input, never raises, and caps its work, so a
hostile or enormous transcript still renders in bounded time as inert markup.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Sequence
from html import escape
from typing import Any

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import STANDARD_TYPES

# Pygments is pure Python (~1 s per MB); past this many characters per call, code is plain.
HIGHLIGHT_LIMIT = 200_000
# markdown-it-py needs up to ~10 µs a character on pathological input ("[[[[..."); past
# this, the rest of a message is shown as plain preformatted text.
MARKDOWN_LIMIT = 100_000
# Bounds the table a single Write or Edit can produce; difflib is quadratic at worst.
DIFF_LINE_LIMIT = 5_000
DIFF_CHAR_LIMIT = 500_000

CODE_CLASSES = frozenset(cls for cls in STANDARD_TYPES.values() if cls)
ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a",
    "span", "div",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
# Classes only ever come from our own renderers; the allow-list keeps it that way.
ALLOWED_CLASSES = {"pre": {"code", "plain"}, "span": CODE_CLASSES, "div": CODE_CLASSES}
ALIGN_VALUES = {"left", "right", "center"}
ALLOWED_VALUES = {"th": {"align": ALIGN_VALUES}, "td": {"align": ALIGN_VALUES}}
URL_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "noopener noreferrer nofollow"

URL_RE = re.compile(r"(?:https?://|mailto:)[^\s]", re.IGNORECASE)
ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement, erase
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, DCS, SOS, PM, APC: up to BEL or ST
    r"|\x1b[ -/]*[0-~]"  # two-character escapes and charset selection (tput sgr0's ESC ( B)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the 8-bit form of CSI
)
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 but \t \n \r; DEL; C1
SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
NUMBERED_RE = re.compile(r" *(\d{1,9})(?:→|\t)")
REMINDER_OPEN, REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"

_formatter = HtmlFormatter(nowrap=True)  # just the token spans; we write the <pre> ourselves


def _as_text(value: Any) -> str:
    """Any value as text that can be encoded: None is empty, lone surrogates become U+FFFD."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = str(value)
    # A JSON "\ud800" decodes to a lone surrogate, which would crash UTF-8 encoding later.
    return SURROGATE_RE.sub("\ufffd", value)


def _clean(value: Any) -> str:
    """Text with CRLF as LF and control characters other than tab and newline removed."""
    return CONTROL_RE.sub("", _as_text(value)).replace("\r\n", "\n").replace("\r", "")


def _cut_at_line(text: str, limit: int) -> tuple[str, str]:
    """`text` split at a newline at or before `limit` (or at `limit` when none is near)."""
    if len(text) <= limit:
        return text, ""
    cut = text.rfind("\n", limit // 2, limit)
    cut = cut + 1 if cut >= 0 else limit
    return text[:cut], text[cut:]


def _lexer(language: str | None = None, filename: str | None = None) -> Lexer | None:
    """The Pygments lexer for a language name or else a filename; None means plain text."""
    # stripnl off: leading blank lines must survive or line numbers would shift.
    options = {"stripnl": False}
    name = (language or "").strip().split(maxsplit=1)
    if name and len(name[0]) <= 64:
        # ClassNotFound, or anything odd a hostile name provokes: fall through to plain.
        with contextlib.suppress(Exception):
            return get_lexer_by_name(name[0].lower(), **options)
    if filename and len(filename) <= 4096:
        with contextlib.suppress(Exception):
            return get_lexer_for_filename(filename, **options)
    return None


def _highlight(code: str, lexer: Lexer | None, limit: int = HIGHLIGHT_LIMIT) -> str:
    """Escaped HTML for `code`: the first `limit` characters highlighted, the rest plain."""
    if lexer is None or limit <= 0:
        return escape(code, quote=False)
    head, tail = _cut_at_line(code, limit)
    try:
        html = highlight(head, lexer, _formatter)
    except Exception:  # a lexer bug must not break the page
        return escape(code, quote=False)
    if not head.endswith("\n") and html.endswith("\n"):
        html = html[:-1]  # Pygments ensures a final newline; keep the text's own ending
    return html + escape(tail, quote=False)


def _allowed_url(url: str) -> bool:
    """Whether markdown-it may make a link or image of `url`: absolute http(s) or mailto."""
    return bool(URL_RE.match(url.strip()))


def _render_fence(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    token = tokens[idx]
    language = unescapeAll(token.info).strip() if token.type == "fence" else ""
    # A message is at most MARKDOWN_LIMIT long, so this bounds the highlighting per message.
    body = _highlight(token.content, _lexer(language))
    return f'<pre class="code"><code>{body}</code></pre>\n'


def _render_image(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    # No <img> from Markdown: it would fetch from wherever the transcript says.
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children, options, env).strip() or "image"
    src = token.attrGet("src")
    label = f"[image: {escape(alt)}]"
    if not src:
        return label
    return f'<a href="{escape(str(src))}">{label}</a>'


def _render_cell(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    # markdown-it aligns cells with style="text-align:..", which the CSP would block.
    token = tokens[idx]
    align = str(token.attrGet("style") or "").removeprefix("text-align:")
    return f'<{token.tag} align="{align}">' if align in ALIGN_VALUES else f"<{token.tag}>"


_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
_md.validateLink = _allowed_url  # rejected links stay literal text
for _rule, _func in {
    "fence": _render_fence,
    "code_block": _render_fence,
    "image": _render_image,
    "th_open": _render_cell,
    "td_open": _render_cell,
}.items():
    _md.add_render_rule(_rule, _func)


def sanitize(html: str) -> str:
    """HTML reduced to the allow-list; every link gets rel="noopener noreferrer nofollow"."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags={"script", "style"},
        attributes=ALLOWED_ATTRIBUTES,
        tag_attribute_values=ALLOWED_VALUES,
        allowed_classes=ALLOWED_CLASSES,
        url_schemes=URL_SCHEMES,
        link_rel=LINK_REL,
    )


def markdown_html(text: str) -> SafeString:
    """CommonMark with tables, strikethrough and highlighted code, sanitised."""
    text = _clean(text)
    head, tail = _cut_at_line(text, MARKDOWN_LIMIT)
    try:
        html = sanitize(_md.render(head))
    except Exception:  # markdown-it and nh3 are robust, but the page must render regardless
        html = f'<pre class="plain">{escape(head, quote=False)}</pre>'
    if tail:
        html += f'<pre class="plain">{escape(tail, quote=False)}</pre>'
    return mark_safe(html)  # noqa: S308 (sanitised by nh3, or escaped)


def split_reminders(text: str) -> tuple[str, str]:
    """Tool output split into its own text and the `<system-reminder>` blocks Claude appends."""
    text = _as_text(text)
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
    text = _as_text(text)
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


def code_html(
    code: str, *, language: str | None = None, filename: str | None = None, start: int | None = None
) -> SafeString:
    """A highlighted `<pre class="code">`; with `start`, lines are numbered from it."""
    code = _clean(code)
    body = _highlight(code, _lexer(language, filename) if code else None)
    if start is not None:
        # Pygments closes its spans at each line end, so splitting on \n is safe.
        lines = body.split("\n")
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()
        body = "\n".join(
            f'<span class="ln">{n}</span>{line}' for n, line in enumerate(lines, start=start)
        )
    return mark_safe(f'<pre class="code"><code>{body}</code></pre>')  # noqa: S308 (escaped)


def _diff_lines(text: str) -> tuple[list[str], bool]:
    """Lines to diff, capped in size; True when something was left out."""
    head, tail = _cut_at_line(_clean(text), DIFF_CHAR_LIMIT)
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
    caption = f"<caption>{escape(_clean(filename))}</caption>" if filename else ""
    return mark_safe(f'<table class="diff">{caption}{"".join(rows)}</table>')  # noqa: S308


def _last_overwrite(line: str) -> str:
    # A bare \r returns the cursor: progress bars redraw a line; keep its final state.
    parts = [part for part in line.split("\r") if part]
    return parts[-1] if parts else ""


def strip_ansi(text: str) -> str:
    """Terminal output as plain text: escape sequences and control characters (not \\t \\n) gone."""
    text = CONTROL_RE.sub("", ANSI_RE.sub("", _as_text(text))).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_last_overwrite(line) for line in text.split("\n"))
    return text


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` characters, at a line end when one is near; and whether cut."""
    text = _as_text(text)
    limit = max(0, limit)
    if len(text) <= limit:
        return text, False
    # A newline at index `limit` still leaves whole lines within the limit.
    cut = text.rfind("\n", limit * 4 // 5, limit + 1)
    return text[: cut if cut >= 0 else limit], True
