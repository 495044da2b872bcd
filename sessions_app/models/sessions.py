"""Projects, sessions and records as imported from the CLIs' session files."""

from __future__ import annotations

from django.db import models
from django.db.models import Case, F, Q, When
from django.db.models.functions import Coalesce, Greatest

from ..conversation import Node
from ..formats import AGENT_LABELS, Agent, agent_for
from ..session_refs import is_namespace, session_ref

TITLE_LIMIT = 300  # a session's title, in the database and in the title record we write


class Project(models.Model):
    """One project folder of one agent, e.g. `~/.claude/projects/-home-me-app`."""

    agent = models.CharField(max_length=16, choices=AGENT_LABELS)
    folder = models.CharField(max_length=4096, unique=True)  # absolute path on disk
    root = models.CharField(max_length=4096)  # the session root it was found under
    path = models.CharField(max_length=4096, blank=True)  # the real cwd, from records
    # On a team hub, the machine and user whose pushes hold it (`user@machine`);
    # "" for the sessions on this machine's own disk.
    namespace = models.CharField(max_length=130, blank=True, default="", db_index=True)
    session_count = models.PositiveIntegerField(default=0)
    last_activity = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["-last_activity"], name="project_activity")]

    worktree: object  # set on the projects list: selectors.worktrees.grouped_with_worktrees

    def __str__(self) -> str:
        return self.path or self.folder

    @property
    def name(self) -> str:
        """The folder name as the CLI wrote it, shown when no cwd is known."""
        return self.folder.rstrip("/").rsplit("/", 1)[-1]


# A fork's activity begins when it is made: its copied records carry its source's times.
# The home page lists by it through an index of its own on PostgreSQL (migration 0015),
# which must change with it.
ACTIVITY = Case(
    When(
        parent__isnull=False,
        then=Greatest(Coalesce("updated_at", "made_at"), Coalesce("made_at", "updated_at")),
    ),
    default=F("updated_at"),
)


class SessionQuerySet(models.QuerySet["Session"]):
    def listed(self) -> SessionQuerySet:
        """Sessions a person picks from: subagent transcripts belong to their parents."""
        return self.filter(is_subagent=False)

    def subagents_of(self, session: Session) -> SessionQuerySet:
        """The subagent transcripts of `session`, by its namespace and id: on a hub another
        machine's file under the same id is that machine's, never this session's."""
        return self.filter(
            is_subagent=True, namespace=session.namespace, owner_session_id=session.session_id
        )


class Session(models.Model):
    """One session file and what its import found."""

    class Kind(models.TextChoices):
        ORIGINAL = "", "original"
        BRANCH = "branch", "branch"
        FORK = "fork", "fork"
        FORK_BEFORE = "fork_before", "edit & fork"
        REWIND_BACKUP = "rewind_backup", "rewind backup"
        REVIVED = "revived", "revived branch"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    session_id = models.UUIDField(db_index=True)
    # Its project's namespace, for lookups by (namespace, id): ids may repeat across machines.
    namespace = models.CharField(max_length=130, blank=True, default="")
    path = models.CharField(max_length=4096, unique=True)
    agent = models.CharField(max_length=16, choices=AGENT_LABELS)

    title = models.CharField(max_length=TITLE_LIMIT, blank=True)
    custom_title = models.CharField(max_length=TITLE_LIMIT, blank=True)
    ai_title = models.CharField(max_length=TITLE_LIMIT, blank=True)  # Claude's `ai-title`
    first_prompt = models.TextField(blank=True)
    cwd = models.CharField(max_length=4096, blank=True)
    git_branch = models.CharField(max_length=255, blank=True)
    models_used = models.JSONField(default=list, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    turn_count = models.PositiveIntegerField(default=0)
    record_count = models.PositiveIntegerField(default=0)
    invalid_count = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    leaf_uuid = models.CharField(max_length=64, blank=True)
    abandoned = models.JSONField(default=list, blank=True)  # branches left by in-CLI rewinds
    # The parent uuids stored records name (outside sidechains) that no stored record
    # has (`conversation.dangling_parents`): an append that brings one is analysed
    # whole. None: not known (too many to keep, or imported before this was kept).
    dangling_parents = models.JSONField(null=True, blank=True, default=None)

    # Subagent transcripts are imported like sessions but hang off their parent.
    is_subagent = models.BooleanField(default=False)
    owner_session_id = models.UUIDField(null=True, blank=True, db_index=True)
    agent_name = models.CharField(max_length=255, blank=True)
    # The CLI archived it (Codex's `archived_sessions/`): its CLI resumes it only once unarchived.
    cli_archived = models.BooleanField(default=False)
    # When an import pass found the file gone: the session is read from the archive since.
    file_removed_at = models.DateTimeField(null=True, blank=True)

    # Lineage: what this session was made from by branch, fork or rewind.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    kind = models.CharField(max_length=16, choices=Kind, default=Kind.ORIGINAL, blank=True)
    fork_turn = models.PositiveIntegerField(null=True, blank=True)
    # Set by a rewind, cleared by its undo or when the session changes again.
    rewind_undo = models.JSONField(default=dict, blank=True)

    # Import state: enough to skip an unchanged file without opening it.
    file_size = models.BigIntegerField(default=0)
    file_mtime_ns = models.BigIntegerField(default=0)
    bytes_imported = models.BigIntegerField(default=0)
    head_digest = models.CharField(max_length=64, blank=True)
    # The last whole line imported: the file counts as grown only while exactly
    # these bytes still sit at this offset (and the inode is the same file).
    tail_offset = models.BigIntegerField(default=0)
    tail_digest = models.CharField(max_length=64, blank=True)
    file_inode = models.BigIntegerField(default=0)
    # (size, mtime_ns) of the file as the dashboard itself last wrote it: a file
    # still in that state was changed by us, not by a running CLI.
    own_write = models.JSONField(default=dict, blank=True)
    line_count = models.PositiveIntegerField(default=0)
    search_lines = models.PositiveIntegerField(default=0)  # lines the search index holds
    usage_lines = models.PositiveIntegerField(default=0)  # lines counted in `Usage`
    # Whether the file holds the CLI's file-backup checkpoints (`formats.claude.file_history`):
    # kept at import, so a page need not look through the records for one.
    file_backups = models.BooleanField(default=False)
    last_message_id = models.CharField(max_length=128, blank=True)
    imported_at = models.DateTimeField(null=True, blank=True)
    made_at = models.DateTimeField(null=True, blank=True, auto_now_add=True)  # its row's birth

    objects = SessionQuerySet.as_manager()
    children_count: int  # set on a page of sessions by selectors.with_children_counts
    worktree: object  # set on a page of sessions: selectors.worktrees.worktree_badge

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session_id", "namespace"],
                condition=Q(is_subagent=False),
                name="unique_session_id",
            )
        ]
        permissions = [
            ("write_sessions", "Can branch, fork and rewind sessions"),
            ("manage_worktrees", "Can fork into git worktrees and remove them"),
            ("run_agents", "Can run the agent CLIs on sessions from the pages"),
        ]
        # One per sort of the sessions page, so that a page of a 10,000-session
        # project is read from an index, not sorted.
        indexes = [
            models.Index(
                fields=["project", "is_subagent", "-updated_at"], name="session_by_activity"
            ),
            models.Index(fields=["project", "is_subagent", "-started_at"], name="session_by_start"),
            models.Index(fields=["project", "is_subagent", "-turn_count"], name="session_by_turns"),
            models.Index(
                fields=["project", "is_subagent", "-output_tokens"], name="session_by_tokens"
            ),
            models.Index(fields=["project", "is_subagent", "title"], name="session_by_title"),
            # The newest import, which a polling list compares its stamp with.
            models.Index(fields=["imported_at"], name="session_imported"),
        ]

    def __str__(self) -> str:
        return self.title or str(self.session_id)

    @property
    def ref(self) -> str:
        """How URLs and commands name it: its id, after its namespace on a hub."""
        return session_ref(self.namespace, self.session_id)

    @property
    def linkable(self) -> bool:
        """Whether its ref makes a URL: a row stored with a malformed namespace (by hand,
        or before names were matched in full) is listed unlinked, never a 500."""
        return not self.namespace or is_namespace(self.namespace)

    @property
    def dated_by_making(self) -> bool:
        """Whether the lists date it by when it was made (`ACTIVITY`): a fork made after its
        last record, whose copied records carry its source's times."""
        return (
            self.parent_id is not None
            and self.made_at is not None
            and (self.updated_at is None or self.made_at > self.updated_at)
        )

    @property
    def agent_profile(self) -> Agent:
        """What this session's CLI does its own way (rewinds, resume command ...)."""
        return agent_for(self.agent)


class RecordQuerySet(models.QuerySet["Record"]):
    def active(self) -> RecordQuerySet:
        """Records on the active branch: what the CLI would resume."""
        return self.filter(active=True)

    def turn_starts(self) -> RecordQuerySet:
        """The prompt that starts each turn (the one turn rule, stored at import)."""
        return self.filter(starts_turn=True)

    def graph_nodes(self) -> list[Node]:
        """The conversation graph's view of these records, in file order."""
        rows = self.order_by("line").values_list(
            "line",
            "uuid",
            "parent_uuid",
            "kind",
            "timestamp",
            "sidechain",
            "logical_parent_uuid",
            "text",
        )
        return [
            Node(line, uuid or None, parent or None, kind, ts, side, logical or None, text or None)
            for line, uuid, parent, kind, ts, side, logical, text in rows.iterator(chunk_size=5000)
        ]

    def through(self, turn: int) -> RecordQuerySet:
        """Records of turns 1..`turn`, and those before the first turn."""
        return self.filter(models.Q(turn__isnull=True) | models.Q(turn__lte=turn))


class Record(models.Model):
    """One line of a session file. The bytes stay in the file, found by offset and length."""

    # No index of its own: the unique (session, line) index serves every lookup by
    # session, and one index fewer makes an insert a third cheaper.
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="records", db_index=False
    )
    line = models.PositiveIntegerField()
    offset = models.BigIntegerField()
    length = models.PositiveIntegerField()
    uuid = models.CharField(max_length=64, blank=True)
    parent_uuid = models.CharField(max_length=64, blank=True)
    logical_parent_uuid = models.CharField(max_length=64, blank=True)
    raw_type = models.CharField(max_length=64, blank=True)
    subtype = models.CharField(max_length=64, blank=True)
    kind = models.CharField(max_length=32)
    turn = models.PositiveIntegerField(null=True, blank=True)
    active = models.BooleanField(default=False)
    sidechain = models.BooleanField(default=False)
    timestamp = models.DateTimeField(null=True, blank=True)
    text = models.TextField(blank=True)  # prompt text (bounded), for lists and titles
    # CRC-32 of the line's bytes: a copy by offset checks it before writing anything.
    digest = models.BigIntegerField(default=0)
    starts_turn = models.BooleanField(default=False)  # the prompt that starts `turn`
    error = models.CharField(max_length=255, blank=True)
    # Usage of the message this record starts (0 on its continuation records), so
    # that a fork's totals are a sum.
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # Its words in the search index (set by services.searching after the import).
    search_text = models.ForeignKey(
        "SearchText", null=True, blank=True, on_delete=models.SET_NULL, db_index=False
    )

    objects = RecordQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "line"], name="unique_record_line"),
        ]
        indexes = [
            models.Index(fields=["session", "turn"], name="record_session_turn"),
            models.Index(fields=["session", "uuid"], name="record_session_uuid"),
            # Only the rows the search pass linked: an import inserts none into it.
            models.Index(
                fields=["search_text"],
                condition=models.Q(search_text__isnull=False),
                name="record_search_text",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.line} {self.kind}"
