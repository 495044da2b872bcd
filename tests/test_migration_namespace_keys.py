"""Migration 0037 on a hub that linked and counted across namespaces before it: the pushed
sessions are indexed for search again, each namespace's texts its own, and a message is a
copy only of another session of its namespace."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("sessions_app", "0036_hub_file_quota_bytes")]
AFTER = [("sessions_app", "0037_search_text_namespace")]


def _migrate(targets: list[tuple[str, str]]):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def test_the_migration_undoes_what_was_keyed_across_namespaces() -> None:
    apps = _migrate(BEFORE)
    try:
        Project = apps.get_model("sessions_app", "Project")
        Session = apps.get_model("sessions_app", "Session")
        Record = apps.get_model("sessions_app", "Record")
        SearchText = apps.get_model("sessions_app", "SearchText")
        Usage = apps.get_model("sessions_app", "Usage")
        made = {}
        for name, namespace in (
            ("local", ""),
            ("alice", "alice@laptop"),
            ("fork", "alice@laptop"),
            ("bob", "bob@desktop"),
        ):
            project = Project.objects.create(agent="claude", folder=f"/{name}", root="/")
            made[name] = Session.objects.create(
                project=project,
                session_id=uuid.uuid4(),
                namespace=namespace,
                path=f"/{name}/s.jsonl",
                agent="claude",
                line_count=1,
                search_lines=1,
            )
        # Bob's record was linked to the text alice's record (same uuid) was stored with.
        text = SearchText.objects.create(uuid="u-1", part="prompt", text="alice's words")
        for name in ("local", "alice", "bob"):  # (not her fork: it has no record here)
            Record.objects.create(
                session=made[name], line=0, offset=0, length=1, kind="prompt", search_text=text
            )
        # Bob's message counted first; alice's, with the same key, taken for its copy.
        Usage.objects.create(session=made["bob"], line=0, key="msg-1", copy=False)
        Usage.objects.create(session=made["alice"], line=0, key="msg-1", copy=True)
        Usage.objects.create(session=made["local"], line=0, key="msg-1", copy=True)
        Usage.objects.create(session=made["alice"], line=1, key="msg-2", copy=False)
        # Her fork's copy of her own message stays a copy.
        Usage.objects.create(session=made["fork"], line=0, key="msg-2", copy=True)

        apps = _migrate(AFTER)
        Session = apps.get_model("sessions_app", "Session")
        Record = apps.get_model("sessions_app", "Record")
        SearchText = apps.get_model("sessions_app", "SearchText")
        Usage = apps.get_model("sessions_app", "Usage")
        pushed = Session.objects.exclude(namespace="")
        assert set(pushed.values_list("search_lines", flat=True)) == {0}, "indexed again"
        assert not Record.objects.filter(session__in=pushed, search_text__isnull=False).exists()
        local = Session.objects.get(namespace="")
        assert local.search_lines == 1 and Record.objects.get(session=local).search_text_id
        assert SearchText.objects.get().namespace == ""
        copies = set(Usage.objects.filter(copy=True).values_list("session__path", "key"))
        assert copies == {("/fork/s.jsonl", "msg-2")}
    finally:
        MigrationExecutor(connection).migrate(
            MigrationExecutor(connection).loader.graph.leaf_nodes()
        )
