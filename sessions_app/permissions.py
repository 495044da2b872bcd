"""Who may write: anyone on a local dashboard, granted users on a team server."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

WRITE_PERMISSION = "sessions_app.write_sessions"
WORKTREE_PERMISSION = "sessions_app.manage_worktrees"
RUN_PERMISSION = "sessions_app.run_agents"


def can_write(user: User | AnonymousUser) -> bool:
    """Whether `user` may branch, fork and rewind."""
    if not settings.TEAM_MODE:
        return True
    return user.is_authenticated and user.has_perm(WRITE_PERMISSION)


def can_manage_worktrees(user: User | AnonymousUser) -> bool:
    """Whether `user` may fork into git worktrees and remove them (their own permission)."""
    if not settings.TEAM_MODE:
        return True
    return user.is_authenticated and user.has_perm(WORKTREE_PERMISSION)


def can_run(user: User | AnonymousUser) -> bool:
    """Whether `user` may run the agent CLIs from the pages: remote code execution by
    design, so only where BRANCHBOARD_ALLOW_RUNS allows it (by default, a local
    dashboard alone) and, on a team server, with the run_agents permission."""
    if not settings.ALLOW_RUNS:
        return False
    if not settings.TEAM_MODE:
        return True
    return user.is_authenticated and user.has_perm(RUN_PERMISSION)


def require_write(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """403 for users without the write permission in team mode."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if not can_write(request.user):
            raise PermissionDenied("You may read sessions but not branch, fork or rewind them.")
        return view(request, *args, **kwargs)

    return wrapped
