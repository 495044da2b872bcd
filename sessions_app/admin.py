from __future__ import annotations

from django.contrib import admin

from .models import ApiToken, AuditEntry, Project, Run, Session


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["path", "agent", "session_count", "last_activity"]
    search_fields = ["path", "folder"]


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["title", "session_id", "agent", "turn_count", "updated_at", "kind"]
    list_filter = ["agent", "kind", "is_subagent"]
    search_fields = ["title", "session_id", "first_prompt"]
    raw_id_fields = ["project", "parent"]


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """The audit log is evidence: visible to admins, never edited."""

    list_display = ["at", "actor", "via", "action", "session_id", "result_session_id", "turn"]
    list_filter = ["action", "via"]
    search_fields = ["actor", "session_id", "result_session_id"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs of the agent CLIs from the pages: a record of what ran, read-only."""

    list_display = ["started_at", "actor", "session", "mode", "state", "exit_status", "ended_at"]
    list_filter = ["state", "mode"]
    search_fields = ["actor", "prompt"]
    raw_id_fields = ["session", "user"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "created_at", "last_used_at"]
    readonly_fields = ["key_hash", "created_at", "last_used_at"]
