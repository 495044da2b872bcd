"""A search hit's line and a session's section, built in Python for speed, are the markup
the template gave."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta
from pathlib import Path

from django.template import Context, Template
from django.utils import timezone

from sessions_app.models import Project, Session
from sessions_app.selectors.search import Hit, SessionHits
from sessions_app.templatetags.search_hits import group_item, hit_item, project_options

# The search page's hit line as a template (before issue 43 moved it into `hit_item`).
TEMPLATE_LINE = Template(
    '<li class="hit">{% if hit.url %}<a href="{{ hit.url }}" class="hit-link">{% else %}'
    '<span class="hit-link">{% endif %}<span class="badge">{{ hit.part_label }}</span>'
    '{% if in_subagent or hit.sidechain %} <span class="meta">subagent</span>'
    '{% elif hit.turn %} <span class="meta">turn {{ hit.turn }}</span>'
    '{% elif hit.abandoned %} <span class="meta">abandoned branch</span>{% endif %}\n'
    '        <span class="snippet">{% for piece, marked in hit.pieces %}{% if marked %}'
    "<mark>{{ piece }}</mark>{% else %}{{ piece }}{% endif %}{% endfor %}</span>"
    "{% if hit.url %}</a>{% else %}</span>{% endif %}{% if hit.also_in %} "
    '<span class="meta also-in">also in {{ hit.also_in }} branch'
    '{{ hit.also_in|pluralize:"es" }}</span>{% endif %}</li>'
)

SNIPPET = "…<script>alert('x')</script> & \"quoted\" parse_line( here…"


def test_hit_item_gives_the_template_markup_for_every_kind_of_hit() -> None:
    """Links with `&` and quotes, no link, turns, subagents, abandoned branches, copies
    elsewhere, marks at either end and none: each line is the template's, byte for byte."""
    marks_choices = [[], [(1, 9)], [(0, 2), (40, 51)], [(len(SNIPPET) - 3, len(SNIPPET))]]
    urls = ["", "/s/abc/?after=3&hl=a%22b#turn-4", "/s/x/?leaf=l'1&all=1"]
    seen = 0
    for url, turn, active, sidechain, in_subagent, also_in, marks, part in itertools.product(
        urls, [None, 0, 7], [True, False], [False, True], [False, True], [0, 1, 2],
        marks_choices, ["tool", "prompt", "<odd>"],
    ):  # fmt: skip
        hit = Hit(1, 10, turn, active, "tool_result", part=part, snippet=SNIPPET,
                  marks=marks, sidechain=sidechain, also_in=also_in, url=url)  # fmt: skip
        expected = TEMPLATE_LINE.render(Context({"hit": hit, "in_subagent": in_subagent}))
        assert str(hit_item(hit, in_subagent)) == expected
        seen += 1
    assert seen == 3 * 3 * 2 * 2 * 2 * 3 * 4 * 3
    shown = str(hit_item(Hit(1, 1, 2, True, "x", snippet=SNIPPET, marks=[(1, 9)]), False))
    assert "<script>" not in shown and "<mark>&lt;script&gt;</mark>" in shown


# A session's section of the search page as a template (before issue 43 moved it into
# `group_item`): the same markup, byte for byte.
TEMPLATE_GROUP = Template(
    "{% load numbers search_hits %}" + (Path(__file__).parent / "search_group.html").read_text()
)


def test_group_item_gives_the_template_markup_for_every_kind_of_session() -> None:
    """Titles and headings with markup, links or none, hub namespaces, subagents, projects
    with a path or only a folder, an update time or none, more hits or none."""
    now = timezone.now() - timedelta(hours=3)
    seen = 0
    for heading, url, namespace, subagent, path, updated, more, q in itertools.product(
        ["", "Fix <b> & \"it\""], ["", "/s/a/?x=1&y='2'"], ["", "al<i>ce@lap&top"],
        [False, True], ["", "/home/<dev>/a&b"], [None, now], [0, 1, 4],
        ["parse_line( & <x>", "a/b?c=d"],
    ):  # fmt: skip
        project = Project(agent="claude", folder="/f/<x>&y", path=path)
        session = Session(
            project=project, agent="claude", session_id=uuid.UUID(int=7), title="T <1>",
            namespace=namespace, is_subagent=subagent, updated_at=updated,
        )  # fmt: skip
        hits = [Hit(1, 10, 3, True, "tool", part="tool", snippet="a <b>", url=url)] * 2
        group = SessionHits(session, hits, more=more, url=url, heading=heading)
        expected = TEMPLATE_GROUP.render(Context({"group": group, "query": {"text": q}}))
        assert str(group_item(group, q)) == expected
        seen += 1
    assert seen == 2**6 * 3 * 2


def test_project_options_give_the_template_markup() -> None:
    """The project filter's options, one selected or none, labels with markup escaped."""
    loop = Template(
        '{% for pk, label in projects %}<option value="{{ pk }}"{% if query.project == pk %}'
        " selected{% endif %}>{{ label }}</option>{% endfor %}"
    )
    projects = [(1, "/home/a"), (2, "b <x> & 'y' (Claude Code, b)"), (30, "c")]
    for selected in (None, 2, 30, 4):
        expected = loop.render(Context({"projects": projects, "query": {"project": selected}}))
        assert str(project_options(projects, selected)) == expected
