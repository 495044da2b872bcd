"""The site's URLs plus views that fail on purpose, for tests/test_error_pages.py."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from branchboard.urls import handler400, handler403, handler404, handler500, urlpatterns


def boom(request: HttpRequest) -> HttpResponse:
    """A view with a bug in it."""
    raise ZeroDivisionError("a bug in a view")


urlpatterns = [path("api/boom", boom), path("boom/", boom), *urlpatterns]

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
