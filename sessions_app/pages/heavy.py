"""Heavy requests take a few of a worker's threads, never all: past BRANCHBOARD_HEAVY_REQUESTS, 503.

An export reads a whole session and a session's usage per turn or a search may read a
great deal: seconds to minutes each. gunicorn's threaded worker accepts a connection
while its threads are busy and queues it, so four exports on `make run`'s two workers of
two threads held every thread and a light page waited behind them (87 s for /recent/).
Each worker process lets at most BRANCHBOARD_HEAVY_REQUESTS of them run at once (by
default one fewer than its threads, `deploy/gunicorn.conf.py`), so a light page always
finds a thread; one more is answered at once, 503 with Retry-After (409 under htmx, whose
page shows a 4xx in place; JSON under /api/), holding its thread for no time. A count in
the process, not a queue: a waiting request would hold the very thread it must leave free.
Behind the shipped nginx site the same endpoints are limited before they reach gunicorn
(`limit_conn` in deploy/nginx-branchboard.conf).

A streamed answer holds its place until it is closed (the last byte sent, or the client
gone), not only while the view runs.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string

RETRY_AFTER = 10  # seconds
MESSAGE = (
    "The dashboard is busy with other large requests (exports, usage per turn, searches). "
    "Nothing went wrong; try again in a few seconds."
)

_lock = threading.Lock()
_running = 0


def running() -> int:
    """Heavy requests this process is answering now."""
    return _running


def _take() -> bool:
    global _running
    with _lock:
        if _running >= max(1, int(settings.HEAVY_REQUESTS)):
            return False
        _running += 1
        return True


def _give_back() -> None:
    global _running
    with _lock:
        _running -= 1


def busy(request: HttpRequest) -> HttpResponse:
    """The answer to a heavy request while every place is taken."""
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"error": MESSAGE}, status=503)
    elif getattr(request, "htmx", False):
        html = render_to_string("sessions_app/busy.html#busy-message", {"message": MESSAGE})
        response = HttpResponse(html, status=409)
    else:
        again = request.get_full_path()
        html = render_to_string("sessions_app/busy.html", {"message": MESSAGE, "again": again})
        response = HttpResponse(html, status=503)
    response["Retry-After"] = str(RETRY_AFTER)
    return response


def heavy[**P, R: HttpResponseBase](
    view: Callable[P, R],
) -> Callable[P, R | HttpResponse]:
    """A view that may read a great deal: it runs only while a heavy place is free."""

    @functools.wraps(view)
    def limited(*args: P.args, **kwargs: P.kwargs) -> R | HttpResponse:
        request = args[0]
        assert isinstance(request, HttpRequest)
        if not _take():
            return busy(request)
        try:
            response = view(*args, **kwargs)
        except BaseException:
            _give_back()
            raise
        if response.streaming:
            # Freed as the response is closed: by the server once the last byte is sent
            # or the client is gone; a FileResponse keeps its file handed to sendfile.
            response._resource_closers.append(_give_back)  # type: ignore[attr-defined]
        else:
            _give_back()
        return response

    return limited
