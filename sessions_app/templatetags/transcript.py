"""Template filters for transcript content: every one escapes or sanitises."""

from __future__ import annotations

from typing import Any

import orjson
from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


def _rendering():
    # Imported on first use: the Markdown and highlighting libraries are heavy.
    from sessions_app import rendering

    return rendering


OUTPUT_LIMIT = 20_000
TEXT_LIMIT = 60_000


@register.filter
def markdown(text: str) -> SafeString:
    """Assistant text as sanitised Markdown."""
    return _rendering().markdown_html(_rendering().truncate(text or "", TEXT_LIMIT)[0])


@register.filter
def output(text: str | None) -> SafeString:
    """Tool output: ANSI stripped, cut to a readable length, escaped."""
    shown, _ = _rendering().truncate(_rendering().strip_ansi(text or ""), OUTPUT_LIMIT)
    return mark_safe(f'<pre class="output">{escape(shown)}</pre>')  # noqa: S308 (escaped)


@register.filter
def is_long(text: str | None) -> bool:
    """Whether `output` cuts this text."""
    return len(text or "") > OUTPUT_LIMIT


@register.filter
def code_listing(text: str | None, filename: str = "") -> SafeString:
    """A file's content (Read tool output) with its line numbers, highlighted."""
    start, body = _rendering().split_numbered_lines(
        _rendering().truncate(text or "", OUTPUT_LIMIT)[0]
    )
    return _rendering().code_html(body, filename=filename or None, start=start)


@register.simple_tag
def diff(old: str, new: str, filename: str = "") -> SafeString:
    """An edit as a line diff."""
    return _rendering().diff_html(old or "", new or "", filename=filename or None)


@register.filter
def pretty_json(value: Any) -> str:
    """A record or tool input as indented JSON (escaped by the template)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        text = repr(value)
    return _rendering().truncate(text, OUTPUT_LIMIT)[0]


@register.filter
def get(mapping: dict, key: str) -> Any:
    """mapping[key] in a template, None when absent."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def ansi_free(text: str | None) -> str:
    """Terminal colour codes removed; the template escapes the rest."""
    return _rendering().strip_ansi(text or "")
