"""Template filters for transcript content: every one escapes or sanitises.

None of them cuts: a page's texts arrive already cut (`transcript.limits`), and
"show all" and exports want them whole. The renderers still bound their own work.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


def _rendering():
    # Imported on first use: the Markdown and highlighting libraries are heavy.
    from sessions_app import rendering

    return rendering


@register.filter
def markdown(text: str) -> SafeString:
    """Assistant text as sanitised Markdown."""
    return _rendering().markdown_html(text or "")


@register.filter
def plain(text: str | None) -> str:
    """User text on one line, its markup by labels (`formats.markup.plain`): for lists."""
    from sessions_app.formats.markup import plain as plain_text

    return plain_text(text or "")


@register.filter
def first_words(text: str | None) -> str:
    """The start of Markdown text on one line, for a collapsed row's summary."""
    return _rendering().first_words(text or "")


@register.filter
def with_chips(text: str | None) -> SafeString:
    """User text: prose escaped with its line breaks, the CLIs' markup as labelled chips."""
    return _rendering().with_chips_html(text or "")


@register.filter
def output(text: str | None) -> SafeString:
    """Tool output: ANSI stripped, escaped; the reminders Claude appends as chips after it."""
    rendering = _rendering()
    body, reminders = rendering.split_reminders(text or "")
    shown = escape(rendering.strip_ansi(body))
    after = rendering.with_chips_html(reminders) if reminders else ""
    return mark_safe(f'<pre class="output">{shown}</pre>{after}')  # noqa: S308 (escaped)


@register.filter
def code_listing(text: str | None, filename: str = "") -> SafeString:
    """A file's content (Read tool output) with its line numbers, highlighted."""
    start, body = _rendering().split_numbered_lines(text or "")
    return _rendering().code_html(body, filename=filename or None, start=start)


@register.simple_tag
def diff(old: str, new: str, filename: str = "") -> SafeString:
    """An edit as a line diff."""
    return _rendering().diff_html(old or "", new or "", filename=filename or None)


@register.simple_tag
def patch(text: str) -> SafeString:
    """An `apply_patch` patch: one diff per file, each hunk numbered from its start."""
    from sessions_app.rendering.diffs import patch_html

    return patch_html(text or "")


@register.filter
def code(text: str | None, language: str = "") -> SafeString:
    """A script as written, highlighted when its language is known."""
    return _rendering().code_html(text or "", language=language or None)


@register.filter
def get(mapping: dict, key: str) -> Any:
    """mapping[key] in a template, None when absent."""
    return mapping.get(key) if isinstance(mapping, dict) else None
