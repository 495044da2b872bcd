"""Code listings: Pygments highlighting with CSS classes only, bounded, built from escaped text."""

from __future__ import annotations

import contextlib
from html import escape

from django.utils.safestring import SafeString, mark_safe
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import STANDARD_TYPES

from .text import clean, cut_at_line

# Pygments is pure Python (~1 s per MB); past this many characters per call, code is plain.
HIGHLIGHT_LIMIT = 200_000
# Dense code (minified, punctuation) gets a <span> per character; past this growth it is
# shown plain, so a page can bound its size before rendering (transcript.limits).
HIGHLIGHT_GROWTH = 10

CODE_CLASSES = frozenset(cls for cls in STANDARD_TYPES.values() if cls)

_formatter = HtmlFormatter(nowrap=True)  # just the token spans; we write the <pre> ourselves


def lexer_for(language: str | None = None, filename: str | None = None) -> Lexer | None:
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


def highlighted(code: str, lexer: Lexer | None, limit: int = HIGHLIGHT_LIMIT) -> str:
    """Escaped HTML for `code`: the first `limit` characters highlighted, the rest plain."""
    if lexer is None or limit <= 0:
        return escape(code, quote=False)
    head, tail = cut_at_line(code, limit)
    try:
        html = pygments_highlight(head, lexer, _formatter)
    except Exception:  # a lexer bug must not break the page
        return escape(code, quote=False)
    if len(html) > HIGHLIGHT_GROWTH * len(head) + 1_000:
        return escape(code, quote=False)
    if not head.endswith("\n") and html.endswith("\n"):
        html = html[:-1]  # Pygments ensures a final newline; keep the text's own ending
    return html + escape(tail, quote=False)


def code_html(
    code: str, *, language: str | None = None, filename: str | None = None, start: int | None = None
) -> SafeString:
    """A highlighted `<pre class="code">`; with `start`, lines are numbered from it."""
    code = clean(code)
    body = highlighted(code, lexer_for(language, filename) if code else None)
    if start is not None:
        # Pygments closes its spans at each line end, so splitting on \n is safe.
        lines = body.split("\n")
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()
        body = "\n".join(
            f'<span class="ln">{n}</span>{line}' for n, line in enumerate(lines, start=start)
        )
    return mark_safe(f'<pre class="code"><code>{body}</code></pre>')  # noqa: S308 (escaped)
