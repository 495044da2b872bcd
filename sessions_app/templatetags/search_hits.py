"""A search hit's snippet as markup, its matches marked; a session's hits as markup."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from ..rendering.numbers import when

if TYPE_CHECKING:
    from ..selectors.search import Hit, SessionHits

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
    elif hit.abandoned:
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


@register.simple_tag
def group_item(group: SessionHits, q: str) -> SafeString:
    """A session's `<section>` of hits, built here as `hit_item` is: as template tags it
    was most of the page's rendering (20 sessions, an include each); `q` the search."""
    session = group.session
    heading = escape(group.heading or session.title or "(untitled)")
    if group.url:
        heading = f'<a href="{escape(group.url)}">{heading}</a>'
    badge = ""
    if session.namespace:
        owner, _, machine = (escape(part) for part in session.namespace.partition("@"))
        badge = (
            f'<span class="badge machine" title="Pushed to this hub by {owner} from the '
            f'machine {machine}"><span class="owner">{owner}</span> · '
            f'<span class="machine-name">{machine}</span></span>'
        )
    badge += "\n"  # as the template's include of the badge ended
    if session.is_subagent:
        badge += ' <span class="badge">subagent</span>'
    project = session.project
    updated = f" · {when(session.updated_at)}" if session.updated_at else ""
    hits = "".join(f"\n      {hit_item(hit, session.is_subagent)}\n    " for hit in group.hits)
    more = ""
    if group.more and not session.is_subagent and group.url:
        plural = "" if group.more == 1 else "es"
        more = (
            f'<p class="meta"><a href="{reverse("sessions:search")}?q={quote(q, safe="/")}'
            f'&amp;session={quote(session.ref, safe="/")}">{group.more} more '
            f"match{plural} in this session</a></p>"
        )
    return mark_safe(  # noqa: S308 (every value is escaped here)
        f'<section class="search-group">\n    <h2>{heading}\n      '
        f'<span class="agent agent-{escape(session.agent)}">'
        f"{escape(session.get_agent_display())}</span>{badge}</h2>\n"
        f'    <p class="meta"><span class="path">'
        f"{escape(project.path or project.folder)}</span>{updated}</p>\n"
        f'    <ol class="hits">\n    {hits}\n    </ol>\n    {more}\n  </section>'
    )


@register.simple_tag
def project_options(projects: list[tuple[int, str]], selected: int | None) -> SafeString:
    """The project filter's `<option>`s (`selected` the one asked for), built here: the
    template's loop over every project cost a millisecond a search."""
    return mark_safe(  # noqa: S308 (every label is escaped here)
        "".join(
            f'<option value="{pk}"{" selected" if pk == selected else ""}>{escape(label)}</option>'
            for pk, label in projects
        )
    )
