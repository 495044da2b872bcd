"""Pages. Thin: a selector or a service call, then render."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .selectors import projects_with_sessions


def project_list(request: HttpRequest) -> HttpResponse:
    """Every project with its sessions, newest activity first."""
    return render(request, "sessions_app/project_list.html", {"projects": projects_with_sessions()})
