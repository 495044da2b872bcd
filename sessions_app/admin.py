from __future__ import annotations

from django.contrib import admin

from .models import Project, Session


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["path", "agent", "session_count", "last_activity"]


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["title", "session_id", "agent", "turn_count", "updated_at", "kind"]
    list_filter = ["agent", "kind", "is_subagent"]
    search_fields = ["title", "session_id", "first_prompt"]
    raw_id_fields = ["project", "parent"]
