"""Telling projects apart where their labels (the working folder) are the same."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django import template

from ..models import Project

register = template.Library()


def project_label(project: Project) -> str:
    """What a list shows for a project: its working folder, else the CLI's folder name."""
    return project.path or project.name


def label_twins(projects: Iterable[Project]) -> set[int]:
    """The projects whose label another project of the list shares (two CLI folders of one
    working folder, say): these rows name their agent and folder too."""
    projects = list(projects)
    seen = Counter(project_label(p) for p in projects)
    return {p.pk for p in projects if seen[project_label(p)] > 1}


register.filter("label_twins", label_twins)
