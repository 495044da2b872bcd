"""Markdown: CommonMark with tables and strikethrough, raw HTML off, then sanitised by nh3.

markdown-it-py parses; fenced code goes through `code`; nh3 (the Rust `ammonia`
sanitiser) keeps only an allow-list of tags, attributes, classes and URL schemes.
"""

from __future__ import annotations

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

from .code import CODE_CLASSES, highlighted, lexer_for
from .text import clean, cut_at_line

# markdown-it-py needs up to ~10 µs a character on pathological input ("[[[[..."); past
# this, the rest of a message is shown as plain preformatted text.
MARKDOWN_LIMIT = 100_000

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


def _allowed_url(url: str) -> bool:
    """Whether markdown-it may make a link or image of `url`: absolute http(s) or mailto."""
    return bool(URL_RE.match(url.strip()))


def _render_fence(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    token = tokens[idx]
    language = unescapeAll(token.info).strip() if token.type == "fence" else ""
    # A message is at most MARKDOWN_LIMIT long, so this bounds the highlighting per message.
    body = highlighted(token.content, lexer_for(language))
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
_md.validateLink = _allowed_url  # type: ignore[method-assign]  # markdown-it's documented hook; rejected links stay text
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
    text = clean(text)
    head, tail = cut_at_line(text, MARKDOWN_LIMIT)
    try:
        html = sanitize(_md.render(head))
    except Exception:  # markdown-it and nh3 are robust, but the page must render regardless
        html = f'<pre class="plain">{escape(head, quote=False)}</pre>'
    if tail:
        html += f'<pre class="plain">{escape(tail, quote=False)}</pre>'
    return mark_safe(html)  # noqa: S308 (sanitised by nh3, or escaped)
