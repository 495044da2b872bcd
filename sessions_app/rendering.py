"""Untrusted transcript text to safe HTML: Markdown, code, diffs.

markdown-it-py parses CommonMark (plus tables and strikethrough) with raw HTML
off; Pygments highlights code with CSS classes; nh3 (the Rust `ammonia`
sanitiser) then keeps only an allow-list of tags, attributes and URL schemes,
so whatever a transcript contains, the page gets inert markup.
"""

from __future__ import annotations

import difflib
import re
from html import escape

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound

HIGHLIGHT_LIMIT = 200_000  # characters; past this, code is shown plain
DIFF_LIMIT = 20_000  # lines per side

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a",
    "span", "div",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "span": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "code": {"class"},
    "ol": {"start"},
}
URL_SCHEMES = {"http", "https", "mailto"}

ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
NUMBERED_RE = re.compile(r"^\s*(\d+)(?:→|\t)")

_formatter = HtmlFormatter(cssclass="code", nowrap=True)


def _lexer(language: str | None = None, filename: str | None = None):
    try:
        if language:
            return get_lexer_by_name(language.strip().split()[0].lower())
    except (ClassNotFound, IndexError):
        pass
    try:
        if filename:
            return get_lexer_for_filename(filename)
    except ClassNotFound:
        pass
    return None


def _highlighted(code: str, language: str | None = None, filename: str | None = None) -> str:
    """The inner HTML of a code block: highlighted when small and known, else escaped."""
    lexer = _lexer(language, filename) if len(code) <= HIGHLIGHT_LIMIT else None
    if lexer is None:
        return escape(code)
    try:
        return highlight(code, lexer, _formatter)
    except Exception:  # a lexer bug must not break the page
        return escape(code)


def _fence(md: MarkdownIt):
    def render(self, tokens, idx, options, env) -> str:
        token = tokens[idx]
        body = _highlighted(token.content, language=token.info or None)
        return f'<pre class="code"><code>{body}</code></pre>\n'

    md.add_render_rule("fence", render)
    md.add_render_rule("code_block", render)


def _image_as_link(self, tokens, idx, options, env) -> str:
    # No <img> from Markdown: it would fetch from wherever the transcript says.
    token = tokens[idx]
    alt = escape(token.content or "image")
    src = escape(token.attrGet("src") or "")
    return f'<a href="{src}">[image: {alt}]</a>'


_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
_fence(_md)
_md.add_render_rule("image", _image_as_link)


def sanitize(html: str) -> str:
    """Keep the allow-list; every link gets rel=noopener noreferrer nofollow."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


def _clean_text(text: str) -> str:
    # Lone surrogates and NULs cannot be encoded; control characters are noise.
    text = text.encode("utf-8", "replace").decode("utf-8")
    return CONTROL_RE.sub("", text)


def markdown_html(text: str) -> SafeString:
    """CommonMark with tables and highlighted code, sanitised."""
    try:
        html = _md.render(_clean_text(text or ""))
    except Exception:  # markdown-it is robust, but a page must render whatever happens
        html = f"<pre>{escape(text or '')}</pre>"
    return mark_safe(sanitize(html))  # noqa: S308 (sanitised by nh3 just now)


def split_numbered_lines(text: str) -> tuple[int | None, str]:
    """Claude's Read output (`   12→line`, or `12<TAB>line`): first number and bare text."""
    lines = text.split("\n")
    first = NUMBERED_RE.match(lines[0]) if lines else None
    if not first:
        return None, text
    stripped = []
    for line in lines:
        match = NUMBERED_RE.match(line)
        if match:
            stripped.append(line[match.end() :])
        elif line.strip():
            return None, text  # not the numbered format after all
        else:
            stripped.append(line)
    return int(first.group(1)), "\n".join(stripped)


def code_html(
    code: str, *, language: str | None = None, filename: str | None = None, start: int | None = None
) -> SafeString:
    """A highlighted `<pre class="code">`, with line numbers from `start` when given."""
    code = _clean_text(code or "")
    body = _highlighted(code, language, filename)
    if start is not None:
        lines = body.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        body = "\n".join(
            f'<span class="ln">{n}</span>{line}' for n, line in enumerate(lines, start=start)
        )
    return mark_safe(f'<pre class="code"><code>{body}</code></pre>')  # noqa: S308 (escaped)


def diff_html(old: str, new: str, *, filename: str | None = None, context: int = 3) -> SafeString:
    """A line diff as a table: hunk headers, old and new line numbers, +/- rows."""
    a = _clean_text(old or "").split("\n")[:DIFF_LIMIT]
    b = _clean_text(new or "").split("\n")[:DIFF_LIMIT]
    rows = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        header = f"@@ -{first[1] + 1},{last[2] - first[1]} +{first[3] + 1},{last[4] - first[3]} @@"
        rows.append(f'<tr class="hunk"><td colspan="3">{escape(header)}</td></tr>')
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    rows.append(_row("ctx", i1 + k + 1, j1 + k + 1, " ", a[i1 + k]))
                continue
            for k in range(i1, i2):
                rows.append(_row("del", k + 1, "", "-", a[k]))
            for k in range(j1, j2):
                rows.append(_row("add", "", k + 1, "+", b[k]))
    title = f"<caption>{escape(filename)}</caption>" if filename else ""
    if not rows:
        rows.append('<tr class="ctx"><td colspan="3">(no change)</td></tr>')
    return mark_safe(f'<table class="diff">{title}{"".join(rows)}</table>')  # noqa: S308


def _row(kind: str, old: int | str, new: int | str, sign: str, text: str) -> str:
    return (
        f'<tr class="{kind}"><td class="ln">{old}</td><td class="ln">{new}</td>'
        f"<td><code>{sign} {escape(text)}</code></td></tr>"
    )


def strip_ansi(text: str) -> str:
    """Terminal escape sequences and stray control characters removed (\\n and \\t kept)."""
    return CONTROL_RE.sub("", ANSI_RE.sub("", text or ""))


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to about `limit` characters, at a line end when one is near."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", int(limit * 0.8), limit)
    return text[: cut if cut > 0 else limit], True
