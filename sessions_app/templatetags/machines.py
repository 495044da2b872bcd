"""A hub's sessions by machine and owner: the parts of a namespace (`user@machine`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django import template

from ..models import Project
from .project_labels import project_label

register = template.Library()


@register.filter
def owner(namespace: str) -> str:
    """Who pushed a namespace's sessions: `alice` of `alice@laptop`."""
    return namespace.partition("@")[0]


@register.filter
def machine(namespace: str) -> str:
    """The machine a namespace's sessions were pushed from: `laptop` of `alice@laptop`."""
    return namespace.partition("@")[2]


@register.filter
def label_twins_by_machine(projects: Iterable[Project]) -> set[int]:
    """The projects whose label another project of the same machine shares: the machine's
    badge tells those of two machines apart, their CLI folder those of one."""
    projects = list(projects)
    seen = Counter((p.namespace, project_label(p)) for p in projects)
    return {p.pk for p in projects if seen[p.namespace, project_label(p)] > 1}
