"""What a refused or failed request answers: the site's own page, never Django's bare one.

A page gets `templates/<status>.html` (what went wrong, and the way back); an htmx
request only the message, for the page to show where it asked; anything under
`/api/` gets `{"error": ...}` like every API answer. branchboard/urls.py names
these as Django's handler400/403/404/500, settings.py as CSRF_FAILURE_VIEW and
AXES_LOCKOUT_CALLABLE (a sign-in throttled by django-axes).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import (
    DisallowedHost,
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import Resolver404
from django.utils.http import url_has_allowed_host_and_scheme

SERVER_ERROR = (
    "Something went wrong on the server while answering this; the error is in the "
    "server's log. Reload the page to see what was done before trying again."
)


def under_api(request: HttpRequest) -> bool:
    """Whether `request` is for the JSON API, which answers JSON whatever happens."""
    return request.path.startswith("/api/")


def _back(request: HttpRequest) -> str:
    """The page the user came from, when it is one of this site's."""
    referer = request.headers.get("Referer", "")
    try:
        hosts = {request.get_host()}
    except DisallowedHost:  # a refused Host header: no way back to name
        return ""
    if referer and url_has_allowed_host_and_scheme(referer, allowed_hosts=hosts):
        return referer
    return ""


def error_answer(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """`message` with `status`: JSON under /api/, a fragment under htmx, else the site's page."""
    if under_api(request):
        return JsonResponse({"error": message}, status=status)
    context = {"message": message, "back": _back(request)}
    if request.headers.get("HX-Request") == "true":
        return render(request, "error_page.html#error-message", context, status=status)
    return render(request, f"{status}.html", context, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: a request that cannot be read (a body too large is 413, and says so)."""
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return error_answer(
            request,
            413,
            f"What was sent is larger than this dashboard accepts ({limit:,} bytes); "
            "nothing was done.",
        )
    if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
        message = "What was sent has more fields than this dashboard accepts; nothing was done."
    elif isinstance(exception, DisallowedHost):
        message = "This dashboard does not answer to that host name."
    else:
        message = "This request could not be read; nothing was done."
    return error_answer(request, 400, message)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler403: what is not allowed, as the refusal said it."""
    message = str(exception) or "You may not do this here."
    return error_answer(request, 403, message)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: what was not found, as the view said it, or that no page is here."""
    # The resolver's own 404 carries the patterns it tried: not for the page.
    message = "" if isinstance(exception, Resolver404) else str(exception)
    message = message or "There is no page at this address."
    return error_answer(request, 404, message)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: the site's page, rendered without the request (the database may be down)."""
    if under_api(request):
        return JsonResponse({"error": SERVER_ERROR}, status=500)
    if request.headers.get("HX-Request") == "true":
        html = render_to_string("error_page.html#error-message", {"message": SERVER_ERROR})
    else:
        html = render_to_string("500.html", {"message": SERVER_ERROR})
    return HttpResponse(html, status=500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a form sent without its page's security token."""
    return error_answer(
        request,
        403,
        "This form's security token is missing or out of date, so nothing was done: "
        "reload the page, then send it again.",
    )


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: object = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: a sign-in refused after too many wrong passwords (429)."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    response = error_answer(
        request,
        429,
        f"Too many failed sign-ins to this account from your address: signing in to it from "
        f"here is paused for {minutes} minute{'s' * (minutes != 1)}, whatever password is "
        "given. Try again later, or ask an administrator to unlock it.",
    )
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response
