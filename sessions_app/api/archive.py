"""The JSON API's door to the archive: restore a removed session to disk."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse

from ..models import Session
from ..services.archive.restoring import session_restore
from ..services.audit import actor_of_request, audit_record
from .views import API, ApiRequest, allow, session_json, token_required


@allow("POST")
@token_required(write=True)
def session_restore_view(request: ApiRequest, session: Session) -> HttpResponse:
    """POST /api/sessions/<id>/restore: the removed file written back from the archive."""
    written = session_restore(session=session)
    actor = actor_of_request(request, origin=API)
    audit_record(actor=actor, action="restore", session=session, result=None, turn=None)
    body = session_json(session)
    body["restored"] = [str(p) for p in written]
    body["not_restored"] = written.problems
    return JsonResponse(body)
