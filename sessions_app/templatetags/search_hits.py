"""A search hit's snippet as markup, its matches marked."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from django import template
from django.utils.safestring import SafeString, mark_safe

if TYPE_CHECKING:
    from ..selectors.search import Hit

register = template.Library()


@register.filter
def marked(hit: Hit) -> SafeString:
    """The hit's snippet escaped, each match in `<mark>`: one filter, not a template loop
    per piece (on a page of 250 hits the loop cost more than the search). `html.escape`
    gives what Django's `escape` gives, without its lazy-string wrapper per call."""
    return mark_safe(  # noqa: S308 (every piece is escaped here)
        "".join(
            f"<mark>{escape(piece)}</mark>" if is_marked else escape(piece)
            for piece, is_marked in hit.pieces
        )
    )


@register.simple_tag
def hit_item(hit: Hit, in_subagent: bool) -> SafeString:
    """A hit's `<li>`, built here: as template tags it took ~20 lookups per hit, and a page
    shows up to 250 hits (`in_subagent`: its session is a subagent's)."""
    url = escape(hit.url)
    where = ""
    if in_subagent or hit.sidechain:
        where = ' <span class="meta">subagent</span>'
    elif hit.turn:
        where = f' <span class="meta">turn {hit.turn}</span>'
    elif not hit.active:
        where = ' <span class="meta">abandoned branch</span>'
    also = ""
    if hit.also_in:
        plural = "" if hit.also_in == 1 else "es"
        also = f' <span class="meta also-in">also in {hit.also_in} branch{plural}</span>'
    return mark_safe(  # noqa: S308 (every value is escaped here)
        '<li class="hit">'
        + (f'<a href="{url}" class="hit-link">' if hit.url else '<span class="hit-link">')
        + f'<span class="badge">{escape(hit.part_label)}</span>{where}\n        '
        + f'<span class="snippet">{marked(hit)}</span>'
        + ("</a>" if hit.url else "</span>")
        + f"{also}</li>"
    )
