"""Two sessions side by side from where they split (`selectors.compare`)."""

from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from ..models import Session
from ..pricing import bundled_source
from ..selectors.compare import compare
from ..selectors.worktrees import git_elsewhere, worktrees_diff
from ..services.reading.branches import Branch, abandoned_branch
from ..session_refs import REF_RE
from .sessions import LEAF_RE, session_or_404


def _branch_or_404(session: Session, leaf: str) -> Branch | None:
    """The abandoned branch of `session` ending at `leaf`; None for no leaf (its active one)."""
    if not leaf:
        return None
    branch = abandoned_branch(session, leaf) if LEAF_RE.fullmatch(leaf) else None
    if branch is None:
        raise Http404("no such abandoned branch in this session")
    return branch


@require_safe
def compare_page(request: HttpRequest, session_id: uuid.UUID, other_id: uuid.UUID) -> HttpResponse:
    """The shared history collapsed, then both directions turn by turn, a summary on top.

    `?leaf_a=` / `?leaf_b=` pick a branch an in-CLI rewind abandoned inside that side's
    file instead of its active branch (the same session on both sides compares them).
    """
    a, b = session_or_404(session_id), session_or_404(other_id)
    branch_a = _branch_or_404(a, request.GET.get("leaf_a", ""))
    branch_b = _branch_or_404(b, request.GET.get("leaf_b", ""))
    if a.pk == b.pk and branch_a == branch_b:
        raise Http404("pick two different branches")
    cmp = compare(a, b, branch_a, branch_b)
    elsewhere = list(dict.fromkeys(m for m in (git_elsewhere(a), git_elsewhere(b)) if m))
    git_diff = worktrees_diff(a, b) if a.pk != b.pk and not elsewhere else None
    context = {
        "cmp": cmp,
        "git_diff": git_diff,
        "git_elsewhere": elsewhere,
        "price_source": bundled_source(),
    }
    return render(request, "sessions_app/compare.html", context)


@require_safe
def compare_pick(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The lineage page's "compare these two" form: `?a=<id>&b=<id>` to the compare page."""
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    if not (REF_RE.fullmatch(a) and REF_RE.fullmatch(b)):
        raise Http404("pick two sessions")
    return redirect("sessions:compare", session_id=a, other_id=b)
