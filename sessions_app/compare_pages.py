"""Two sessions side by side from where they split (`selectors.compare`)."""

from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from .pricing import bundled_source
from .selectors.compare import compare
from .views import session_or_404


@require_safe
def compare_page(request: HttpRequest, session_id: uuid.UUID, other_id: uuid.UUID) -> HttpResponse:
    """The shared history collapsed, then both directions turn by turn, a summary on top."""
    a, b = session_or_404(session_id), session_or_404(other_id)
    context = {"cmp": compare(a, b), "price_source": bundled_source()}
    return render(request, "sessions_app/compare.html", context)


@require_safe
def compare_pick(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The lineage page's "compare these two" form: `?a=<id>&b=<id>` to the compare page."""
    try:
        a, b = uuid.UUID(request.GET.get("a", "")), uuid.UUID(request.GET.get("b", ""))
    except ValueError:
        raise Http404("pick two sessions") from None
    return redirect("sessions:compare", session_id=a, other_id=b)
