from __future__ import annotations

from django.urls import path, re_path

from . import archive as api_archive
from . import hub as api_hub
from . import usage as api_usage
from . import views as api

app_name = "api"

urlpatterns = [
    path("openapi.json", api.openapi, name="openapi"),
    path("search", api.search_view, name="search"),
    path("usage/activity", api_usage.activity_view, name="usage_activity"),
    path("usage/tools", api_usage.tools_view, name="usage_tools"),
    path("sessions/<sref:session_id>", api.session_detail, name="session"),
    path("sessions/<sref:session_id>/fork", api.session_fork_view, name="fork"),
    path("sessions/<sref:session_id>/rewind", api.session_rewind_view, name="rewind"),
    path("sessions/<sref:session_id>/rewind/undo", api.session_rewind_undo_view, name="undo"),
    path("sessions/<sref:session_id>/restore", api_archive.session_restore_view, name="restore"),
    # A team hub: what machines push, and the forks they take back (services.hub).
    path("hub/whoami", api_hub.whoami, name="hub_whoami"),
    path("hub/state", api_hub.state, name="hub_state"),
    path("hub/chunk", api_hub.chunk, name="hub_chunk"),
    path("hub/commit", api_hub.commit, name="hub_commit"),
    path("hub/batch", api_hub.batch, name="hub_batch"),
    path("hub/catch-up", api_hub.catch_up, name="hub_catch_up"),
    path("hub/pulls", api_hub.pulls, name="hub_pulls"),
    path("hub/pulled", api_hub.pulled, name="hub_pulled"),
    path("hub/accept", api_hub.accept, name="hub_accept"),
    path("hub/file", api_hub.file, name="hub_file"),
    # Anything else under /api/ is a JSON 404, like every API answer.
    re_path(r"^.*$", api.not_found, name="not_found"),
]
