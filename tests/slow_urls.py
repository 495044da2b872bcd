"""The site's URLs plus a view whose query takes as long as asked (PostgreSQL's pg_sleep),
and one that says the statement timeout its connection runs under, for
tests/test_statement_timeout.py."""

from __future__ import annotations

from collections.abc import Iterator

from django.db import connection
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from branchboard.urls import urlpatterns


@csrf_exempt
def sleep(request: HttpRequest, seconds: float) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(%s)", [seconds])
    return HttpResponse("slept")


@csrf_exempt
def timeout(request: HttpRequest) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return HttpResponse(cursor.fetchone()[0])


def streamed(request: HttpRequest) -> StreamingHttpResponse:
    def chunks() -> Iterator[str]:
        for n in range(2):
            with connection.cursor() as cursor:
                cursor.execute("SHOW statement_timeout")
                yield (" " if n else "") + cursor.fetchone()[0]

    return StreamingHttpResponse(chunks())


urlpatterns = [
    path("statement-timeout/streamed/", streamed),
    path("sleep/<int:seconds>/", sleep),
    path("api/hub/sleep/<int:seconds>/", sleep),
    path("statement-timeout/", timeout),
    *urlpatterns,
]
