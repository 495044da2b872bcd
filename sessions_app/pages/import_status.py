"""The importer's progress on every page: a banner that polls while the import runs."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from ..selectors.importing import import_progress


@require_safe
def import_status(request: HttpRequest) -> HttpResponse:
    """The banner: progress while the importer works, nothing once the import is whole.

    The banner polls only while the importer runs; the poll after the end says so once,
    with a link to reload the page, which was drawn before every session was there.
    """
    progress = import_progress()
    context = {
        "progress": progress,
        "just_finished": request.GET.get("was") == "running"
        and progress is not None
        and not progress.running,
    }
    return render(request, "sessions_app/importing/status.html#import-status", context)


@require_safe
def import_status_json(request: HttpRequest) -> JsonResponse:
    """The same progress for scripts (and the benchmark that times a first import)."""
    progress = import_progress()
    if progress is None:
        return JsonResponse({"whole": False, "running": False, "phase": None})
    return JsonResponse(progress.as_json())
