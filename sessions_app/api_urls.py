from __future__ import annotations

from django.urls import path, re_path

from . import api, api_archive

app_name = "api"

urlpatterns = [
    path("openapi.json", api.openapi, name="openapi"),
    path("search", api.search_view, name="search"),
    path("sessions/<uuid:session_id>", api.session_detail, name="session"),
    path("sessions/<uuid:session_id>/fork", api.session_fork_view, name="fork"),
    path("sessions/<uuid:session_id>/rewind", api.session_rewind_view, name="rewind"),
    path("sessions/<uuid:session_id>/rewind/undo", api.session_rewind_undo_view, name="undo"),
    path("sessions/<uuid:session_id>/restore", api_archive.session_restore_view, name="restore"),
    # Anything else under /api/ is a JSON 404, like every API answer.
    re_path(r"^.*$", api.not_found, name="not_found"),
]
