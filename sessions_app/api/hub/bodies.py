"""A hub request's body, read within BRANCHBOARD_HUB_BODY_SECONDS: after that a 408, and
the thread is free for another request."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.conf import settings
from django.http import HttpRequest

from ...services.hub.receiving import PushRefused


class SlowBody(PushRefused):
    status = 408


@contextmanager
def body_deadline(request: HttpRequest) -> Iterator[None]:
    """A request body gets BRANCHBOARD_HUB_BODY_SECONDS to arrive: then the socket's read
    side is shut, the read ends short and the request is refused (408), so a client
    trickling its bytes cannot hold a worker's thread. Under gunicorn, which hands the
    socket over; behind the shipped nginx the body comes whole from it anyway."""
    sock = request.META.get("gunicorn.socket")
    if not isinstance(sock, socket.socket) or not request.META.get("CONTENT_LENGTH"):
        yield
        return
    seconds = int(settings.HUB_BODY_SECONDS)
    timer = threading.Timer(seconds, _read_side_shut, args=(sock,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _read_side_shut(sock: socket.socket) -> None:
    with suppress(OSError):  # closed already: the request is over
        sock.shutdown(socket.SHUT_RD)


def _body(request: HttpRequest, size: int) -> bytes:
    """The request's body, `size` bytes; 408 when it did not arrive in time."""
    try:
        data = request.read(size)
    except OSError:
        data = b""
    if len(data) < size:
        raise SlowBody(
            f"the body did not arrive whole within {settings.HUB_BODY_SECONDS} s "
            f"({len(data)} of {size} bytes); push again"
        )
    return data
