from __future__ import annotations

from django.urls import path

from .pages import (
    actions,
)
from .pages import (
    compare as compare_pages,
)
from .pages import (
    images as image_pages,
)
from .pages import (
    import_status as import_status_pages,
)
from .pages import (
    lists as list_pages,
)
from .pages import (
    runs as run_pages,
)
from .pages import (
    search as search_pages,
)
from .pages import (
    sessions as views,
)
from .pages import (
    transcript as transcript_pages,
)
from .pages import (
    usage as usage_pages,
)
from .pages.usage import activity as usage_activity

app_name = "sessions"

urlpatterns = [
    path("", list_pages.project_list, name="project_list"),
    path("recent/", list_pages.recent_sessions, name="recent"),
    path("import-status/", import_status_pages.import_status, name="import_status"),
    path("import-status.json", import_status_pages.import_status_json, name="import_status_json"),
    path("projects/<int:pk>/", list_pages.project_detail, name="project_detail"),
    path("search/", search_pages.search_page, name="search"),
    path("usage/", usage_pages.usage_overview, name="usage"),
    path("usage.csv", usage_pages.usage_csv, name="usage_csv"),
    path("usage/tools.csv", usage_pages.usage_tools_csv, name="usage_tools_csv"),
    path("usage/activity/", usage_activity.usage_activity, name="usage_activity"),
    path(
        "sessions/<sref:session_id>/usage.csv",
        usage_pages.session_usage_csv,
        name="session_usage_csv",
    ),
    path(
        "sessions/<sref:session_id>/usage-turns/",
        usage_pages.session_usage_turns,
        name="session_usage_turns",
    ),
    path("sessions/<sref:session_id>/", transcript_pages.session_detail, name="session_detail"),
    path(
        "sessions/<sref:session_id>/records/<int:line>/output/",
        views.record_output,
        name="record_output",
    ),
    path(
        "sessions/<sref:session_id>/records/<int:line>/output/<int:index>/",
        views.record_output,
        name="record_item",
    ),
    path(
        "sessions/<sref:session_id>/records/<int:line>/images/<int:number>",
        image_pages.record_image,
        name="record_image",
    ),
    path(
        "sessions/<sref:session_id>/subagents/<str:agent_id>/",
        views.subagent,
        name="subagent",
    ),
    path(
        "sessions/<sref:session_id>/records/<int:line>/subagent/<int:index>/",
        views.call_subagent,
        name="call_subagent",
    ),
    path("sessions/<sref:session_id>/live/", transcript_pages.session_live, name="session_live"),
    path("sessions/<sref:session_id>/lineage/", views.lineage, name="lineage"),
    path("sessions/<sref:session_id>/compare/", compare_pages.compare_pick, name="compare_pick"),
    path(
        "sessions/<sref:session_id>/compare/<sref:other_id>/",
        compare_pages.compare_page,
        name="compare",
    ),
    path("sessions/<sref:session_id>/export.<str:fmt>", views.export, name="export"),
    path(
        "sessions/<sref:session_id>/versions/<str:name>/",
        views.earlier_version,
        name="earlier_version",
    ),
    path("sessions/<sref:session_id>/fork/", actions.fork, name="fork"),
    path("projects/<int:pk>/worktrees/remove/", actions.worktree_remove, name="worktree_remove"),
    path("sessions/<sref:session_id>/rewind/", actions.rewind, name="rewind"),
    path("sessions/<sref:session_id>/restore/", actions.restore, name="restore"),
    path("sessions/<sref:session_id>/runs/", run_pages.start, name="run_start"),
    path("sessions/<sref:session_id>/runs/panel/", run_pages.panel, name="run_panel"),
    path("sessions/<sref:session_id>/runs/<int:pk>/stop/", run_pages.stop, name="run_stop"),
    path("sessions/<sref:session_id>/rewind/undo/", actions.rewind_undo, name="rewind_undo"),
]
