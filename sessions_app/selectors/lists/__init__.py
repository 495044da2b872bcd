"""The lists the pages show: projects, the sessions of a project, one listed session."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    Max,
    OuterRef,
    Q,
    QuerySet,
)

from ...models import Project, Record, Session
from ...session_refs import BadRef, ref_parse
from .paging import SESSION_SORTS


def undone_rewind() -> ExpressionWrapper:
    """Whether a session is the backup of a rewind that was undone.

    The backup's last record is on its session's active branch again: the session
    holds the backup's whole history, so the backup is no separate direction any more.
    (Rewound again, the session leaves that record and the backup is one again.)
    """
    again = Record.objects.filter(
        session_id=OuterRef("parent_id"), uuid=OuterRef("leaf_uuid"), active=True
    )
    return ExpressionWrapper(
        Q(kind=Session.Kind.REWIND_BACKUP) & Exists(again), output_field=BooleanField()
    )


def rewind_undone(session: Session) -> bool:
    """Whether `session` is the backup of a rewind that was undone (see `undone_rewind`)."""
    if session.kind != Session.Kind.REWIND_BACKUP:
        return False
    return Session.objects.filter(pk=session.pk).filter(undone_rewind()).exists()


def undone_backups(project: Project) -> int:
    """How many backups of undone rewinds a project's list leaves out."""
    backups = Session.objects.listed().filter(project=project, kind=Session.Kind.REWIND_BACKUP)
    return backups.filter(undone_rewind()).count()


def _by_ref(ref: uuid.UUID | str) -> QuerySet[Session]:
    """The listed session a ref names (`<id>`, or `user@machine/<id>` on a hub)."""
    try:
        namespace, session_id = ref_parse(str(ref))
    except BadRef:
        return Session.objects.none()
    return Session.objects.listed().filter(namespace=namespace, session_id=session_id)


def listed_session(session_id: uuid.UUID | str) -> Session | None:
    """The listed session (not a subagent transcript) with this ref, or None."""
    return _by_ref(session_id).select_related("project", "parent").first()


def session_lines(session_id: uuid.UUID | str) -> int | None:
    """How many lines of the session are imported (one small query), or None if unknown."""
    found = _by_ref(session_id).values_list("line_count")
    row = found.first()
    return row[0] if row else None


def newest_import(project: Project | None = None) -> datetime | None:
    """When the newest import (of the project's sessions, or of any) was: one small query."""
    sessions = Session.objects.all() if project is None else project.sessions.all()
    return sessions.aggregate(newest=Max("imported_at"))["newest"]


def hub_namespaces() -> list[str]:
    """The namespaces (`user@machine`) whose pushes hold projects here; none off a hub."""
    found = Project.objects.exclude(namespace="").order_by("namespace").distinct()
    return list(found.values_list("namespace", flat=True))


def namespaces_of(*, owner: str = "", machine: str = "") -> list[str]:
    """The namespaces of `owner` (on any machine), of `machine` (anyone's), or of both."""
    return [
        namespace
        for namespace in hub_namespaces()
        if (not owner or namespace.partition("@")[0] == owner)
        and (not machine or namespace.partition("@")[2] == machine)
    ]


def projects_for_dashboard(
    *, query: str = "", namespaces: list[str] | None = None
) -> QuerySet[Project]:
    """Projects with sessions, most recently active first, optionally filtered by path and
    by the namespaces (machines and owners) they were pushed from."""
    projects = Project.objects.filter(session_count__gt=0)
    if namespaces is not None:
        projects = projects.filter(namespace__in=namespaces)
    if query:
        projects = projects.filter(Q(path__icontains=query) | Q(folder__icontains=query))
    return projects.order_by("-last_activity", "folder")


def sessions_of_project(
    *,
    project: Project,
    query: str = "",
    sort: str = "updated",
    empty: bool = False,
    undone: bool = False,
) -> QuerySet:
    """A project's listed sessions with their parent and child count, for one sorted list.

    Sessions without a prompt (nothing to resume or branch) are listed apart (`empty`);
    backups of undone rewinds only when asked (`undone`), each marked.
    """
    sessions = (
        Session.objects.listed()
        .filter(project=project)
        .select_related("parent")
        .defer(
            "abandoned", "first_prompt", "rewind_undo", "parent__abandoned", "parent__first_prompt"
        )
    )
    sessions = sessions.filter(turn_count=0) if empty else sessions.exclude(turn_count=0)
    sessions = sessions.annotate(undone=undone_rewind())
    if not undone:
        sessions = sessions.filter(undone=False)
    if query:
        sessions = sessions.filter(
            Q(title__icontains=query) | Q(first_prompt__icontains=query) | Q(git_branch=query)
        )
    return sessions.order_by(SESSION_SORTS.get(sort, SESSION_SORTS["updated"]), "-id")


def recent_sessions(
    *,
    query: str = "",
    agent: str = "",
    sort: str = "updated",
    namespaces: list[str] | None = None,
) -> QuerySet:
    """Sessions with a prompt across every project, newest activity first (or `sort`);
    backups of undone rewinds left out; only those of `namespaces` when given."""
    sessions = (
        Session.objects.listed()
        .exclude(turn_count=0)
        .alias(undone=undone_rewind())
        .filter(undone=False)
        .select_related("project", "parent")
        .defer(
            "abandoned", "first_prompt", "rewind_undo", "parent__abandoned", "parent__first_prompt"
        )
    )
    if agent:
        sessions = sessions.filter(agent=agent)
    if namespaces is not None:
        sessions = sessions.filter(namespace__in=namespaces)
    if query:
        sessions = sessions.filter(
            Q(title__icontains=query)
            | Q(first_prompt__icontains=query)
            | Q(git_branch=query)
            | Q(project__path__icontains=query)
        )
    return sessions.order_by(SESSION_SORTS.get(sort, SESSION_SORTS["updated"]), "-id")


def with_children_counts(sessions: list[Session]) -> list[Session]:
    """Set `children_count` on a page of sessions with one query for the whole page."""
    counts = dict(
        Session.objects.filter(parent_id__in=[s.pk for s in sessions])
        .values_list("parent_id")
        .annotate(n=Count("id"))
        .values_list("parent_id", "n")
    )
    for session in sessions:
        session.children_count = counts.get(session.pk, 0)
    return sessions
