"""An image a record holds, served by URL so a page stays small (`<img src>`, not base64).

The record is read from the session file by the offset the index names, and served only
when its bytes are still the ones imported (length and CRC, as every read by offset is
checked); only PNG, JPEG, GIF and WebP, decoded, up to a size cap, never sniffed.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid

import orjson
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_safe

from ..services.branching import StaleIndex
from ..services.branching.copying import read_record
from ..services.roots import UnsafePath
from ..transcript.items import IMAGE_TYPES, record_images
from ..transcript.limits import IMAGE_LIMIT
from .sessions import session_or_404

WHITESPACE_RE = re.compile(rb"\s+")
# Nothing in an image answer may run or load anything but itself.
IMAGE_CSP = {"default-src": ["'none'"], "img-src": ["'self'"]}


@require_safe
@csp_override(IMAGE_CSP)
def record_image(
    request: HttpRequest, session_id: uuid.UUID, line: int, number: int
) -> HttpResponse:
    """Image `number` of the record at `line`, decoded, with its own media type."""
    session = session_or_404(session_id)
    row = session.records.filter(line=line).values_list("offset", "length", "digest").first()
    if row is None:
        raise Http404("no such record")
    try:
        raw = read_record(session, *row)
    except StaleIndex:
        return _refusal(409, "The session file changed since it was imported: reload the page.")
    except (OSError, UnsafePath) as error:
        raise Http404("the session file cannot be read") from error
    try:
        images = record_images(orjson.loads(raw), session.agent_profile)
    except orjson.JSONDecodeError as error:
        raise Http404("no such image") from error
    if number >= len(images):
        raise Http404("no such image")
    media, payload = images[number]
    if media not in IMAGE_TYPES:
        return _refusal(415, "Only PNG, JPEG, GIF and WebP images are shown.")
    limit = getattr(settings, "BRANCHBOARD_MAX_IMAGE_BYTES", IMAGE_LIMIT)
    if len(payload) * 3 // 4 > limit:
        return _refusal(413, f"The image is larger than the {limit // 1_048_576} MB shown.")
    try:
        data = base64.b64decode(WHITESPACE_RE.sub(b"", payload.encode("ascii")), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise Http404("no such image") from error
    # The record's CRC names its bytes: the same ETag means the same image.
    etag = f'"{row[2] & 0xFFFFFFFF:08x}-{line}-{number}"'
    if etag in request.headers.get("If-None-Match", ""):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(data, content_type=media)
    response["ETag"] = etag
    # Private: a transcript's images are its owner's. Revalidated each time, cheaply (304),
    # because a rewind can put another record at the same line.
    response["Cache-Control"] = "private, no-cache"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _refusal(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response
