"""Reads for the pages: one function per page-sized question."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from .models import Project, Session


def projects_with_sessions(*, per_project: int = 20) -> QuerySet[Project]:
    """Projects by last activity, each with its most recent listed sessions."""
    recent = Session.objects.listed().order_by("-updated_at")
    return (
        Project.objects.filter(session_count__gt=0)
        .order_by("-last_activity", "folder")
        .prefetch_related(Prefetch("sessions", queryset=recent, to_attr="recent_sessions"))
    )
