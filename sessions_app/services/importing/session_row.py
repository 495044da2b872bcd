"""The session row of a file: made or reset before a read, written once with what the file said."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson
from django.db import transaction
from django.utils import timezone

from ...conversation import AbandonedBranch, Analysis, Extension, Node
from ...formats import INVALID, agent_for, collapse, is_session_id
from ...formats.markup import title_text
from ...formats.projects import session_project
from ...models import TITLE_LIMIT, Project, Session
from ..discovery import SessionFile
from ..hub_folder import namespace_of
from ..roots import UnsafePath, open_regular
from .lineage import _descends_from as _descends_from
from .lineage import _split_turn as _split_turn
from .lineage import cli_branches_link as cli_branches_link
from .plan import HEAD_BYTES, StoredState, digest
from .reading import FileReader


def head_digest(head: bytes) -> str:
    """The digest a fully imported file's head is compared with on the next import."""
    return digest(head[:HEAD_BYTES])


def stored_state(session: Session) -> StoredState:
    """What the session row remembers of its file, for `importing.plan`."""
    return StoredState(
        size=session.file_size,
        mtime_ns=session.file_mtime_ns,
        inode=session.file_inode,
        bytes_imported=session.bytes_imported,
        head_digest=session.head_digest,
        tail_offset=session.tail_offset,
        tail_digest=session.tail_digest,
    )


def new_session(source: SessionFile, known: dict[str, int]) -> Session:
    """An unsaved session row for a file seen for the first time (its project made if new).

    `known` holds the ids of projects already met (by folder); a project made here
    joins it once its transaction commits.
    """
    folder = str(source.project_folder)
    namespace = namespace_of(source.root)
    project_id = known.get(folder)
    if project_id is None:
        defaults = {"agent": source.agent, "root": str(source.root), "namespace": namespace}
        project, created = Project.objects.get_or_create(folder=folder, defaults=defaults)
        project_id = project.pk
        if created:
            transaction.on_commit(lambda: known.setdefault(folder, project.pk))
        else:
            known[folder] = project_id
    return Session(
        project_id=project_id,
        path=str(source.path),
        agent=source.agent,
        session_id=source.session_id or source.owner_session_id or "0" * 32,
        namespace=namespace,
        is_subagent=source.is_subagent,
        owner_session_id=source.owner_session_id,
        cli_archived=source.archived,
    )


def reset(session: Session) -> None:
    """Forget what an earlier import counted, before the file is read again from the start."""
    for name in (
        "turn_count",
        "record_count",
        "invalid_count",
        "input_tokens",
        "output_tokens",
        "bytes_imported",
        "line_count",
        "search_lines",
        "usage_lines",
        "tail_offset",
    ):
        setattr(session, name, 0)
    session.tail_digest = ""
    session.file_backups = False
    session.models_used = []
    if not (session.made_at and agent_for(session.agent).prefix_fork is not None):
        # A file's own title is read again; a fork the dashboard wrote of a CLI that keeps
        # names out of its files (Codex) holds its name in the row alone (`forking._titled`).
        session.custom_title = ""
    session.ai_title = ""
    session.last_message_id = ""
    session.started_at = session.updated_at = None


def update_session(
    session: Session,
    source: SessionFile,
    reader: FileReader,
    analysis: Analysis,
    nodes: list[Node],
    stat: os.stat_result,
    head: bytes,
) -> None:
    """Write the session row once, with the file's state, counts, title, times and lineage."""
    session.record_count = len(nodes)
    session.invalid_count = sum(1 for n in nodes if n.kind == INVALID)
    session.turn_count = analysis.turn_count
    session.leaf_uuid = analysis.leaf_uuid or ""
    session.abandoned = [_abandoned(b) for b in analysis.abandoned]
    first = nodes[analysis.prompt_lines[0]].text if analysis.prompt_lines else None
    session.first_prompt = first or ""
    # Turns whose prompt a CLI branch copied: where it split from its source.
    copied = sum(1 for i in analysis.prompt_lines if nodes[i].line <= reader.last_copied_line)
    _write(
        session,
        source,
        reader,
        stat,
        head,
        fallback_title=lambda: _fallback_title(nodes),
        copied_turns=copied,
        prompts=[nodes[i].text or "" for i in analysis.prompt_lines],
    )


def appended_update_possible(session: Session) -> bool:
    """Whether an append that continues the active branch can leave the title as it is."""
    return session.turn_count > 0 and bool(title_text(session.first_prompt))


def update_session_appended(
    session: Session,
    source: SessionFile,
    reader: FileReader,
    extension: Extension,
    stat: os.stat_result,
    head: bytes,
) -> None:
    """`update_session` after an append that only continued the active branch."""
    session.record_count += len(reader.nodes)
    session.invalid_count += sum(1 for n in reader.nodes if n.kind == INVALID)
    session.turn_count = extension.turn_count
    session.leaf_uuid = extension.leaf_uuid
    session.abandoned = [*session.abandoned, *(_abandoned(b) for b in extension.abandoned)]
    # The first prompt stays where it was (`appended_update_possible`), so does the title
    # it gives.
    _write(session, source, reader, stat, head, fallback_title=lambda: "")


def _abandoned(branch: AbandonedBranch) -> dict:
    return {
        "at_turn": branch.at_turn,
        "turns": branch.turns,
        "line": branch.first_line,
        "leaf_uuid": branch.leaf_uuid,
        "prompt": title_text(branch.prompt, 200),
    }


def _write(
    session: Session,
    source: SessionFile,
    reader: FileReader,
    stat: os.stat_result,
    head: bytes,
    *,
    fallback_title: Callable[[], str],
    copied_turns: int | None = None,
    prompts: list[str] | None = None,
) -> None:
    """The rest of the row: file state, tokens, models, title, times, lineage; then save."""
    session.bytes_imported = reader.bytes_end or session.bytes_imported
    # Search texts and usage stored with the rows (Codex's usage: by the usage pass).
    one_pass = reader.report.texts
    searched = one_pass and session.search_lines >= session.line_count
    counted = one_pass and agent_for(source.agent).usage_reader is None
    counted = counted and session.usage_lines >= session.line_count
    session.line_count = reader.line_end or session.line_count
    session.search_lines = session.line_count if searched else session.search_lines
    session.usage_lines = session.line_count if counted else session.usage_lines
    session.head_digest = digest(head[: min(HEAD_BYTES, session.bytes_imported)])
    if reader.tail_offset >= 0:
        tail = reader.tail  # a long line's digest was taken as it was read
        session.tail_offset = reader.tail_offset
        session.tail_digest = tail if isinstance(tail, str) else digest(tail)
    session.file_size = stat.st_size
    session.file_mtime_ns = stat.st_mtime_ns
    session.file_inode = stat.st_ino
    session.models_used = reader.models
    session.file_backups = session.file_backups or reader.file_backups
    session.input_tokens += reader.input_tokens
    session.output_tokens += reader.output_tokens
    session.last_message_id = (reader.last_message_id or "")[:128]
    if reader.title:
        session.custom_title = collapse(reader.title, TITLE_LIMIT)
    if reader.ai_title:
        session.ai_title = collapse(reader.ai_title, TITLE_LIMIT)
    first = session.first_prompt
    # A title the user gave, else one the CLI's model proposed, else the first prompt.
    session.title = (
        session.custom_title or session.ai_title or title_text(first) or fallback_title()
    )[:TITLE_LIMIT]
    times = [n.timestamp for n in reader.nodes if n.timestamp]
    if times:
        lo, hi = min(times), max(times)
        if session.started_at is None:  # updated_at held the file's mtime, standing in
            session.started_at, session.updated_at = lo, hi
        else:
            session.started_at = min(session.started_at, lo)
            session.updated_at = max(session.updated_at, hi) if session.updated_at else hi
    if session.started_at is None:
        # No record has said its time (as a fresh import would find): the file's mtime.
        session.updated_at = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    # The one rule the hub's push decides a file's project by, too (`formats.projects`).
    session.cwd = session.cwd or session_project(
        agent_for(source.agent), reader.cwd, source.project_folder
    )
    session.git_branch = (reader.git_branch or session.git_branch)[:255]
    made = None
    unlinked: tuple[str, int | None, datetime | None] | None = None
    if source.is_subagent:
        session.owner_session_id = session.owner_session_id or _uuid_or_none(reader.owner_id)
        session.agent_name = session.agent_name or _subagent_name(source.path, source.root)
    elif reader.forked_from and session.parent_id is None and not session.kind:
        # A branch made inside the CLI (`/branch`) says where it came from.
        parent_id = _uuid_or_none(reader.forked_from)
        # Its namespace's sessions, never a subagent's row (which carries its owner's id).
        same = Session.objects.listed().filter(namespace=session.namespace)
        parent = same.filter(session_id=parent_id).first() if parent_id else None
        if parent is not None and parent.pk != session.pk:
            session.parent = parent
            session.kind = Session.Kind.BRANCH
            session.fork_turn = _split_turn(source.agent, copied_turns, prompts or [], parent)
            made = reader.branched_at
        elif parent is None and parent_id:
            unlinked = (parent_id, copied_turns, reader.branched_at)
    session.imported_at = timezone.now()
    session.save()
    if unlinked is not None:
        reader.report.unlinked.append((session.pk, *unlinked))
    if made is not None:
        # Made when it first wrote a record of its own, not when it was imported (the
        # row's birth, which `save` stamps on an insert).
        Session.objects.filter(pk=session.pk).update(made_at=made)
        session.made_at = made


def _fallback_title(nodes: list[Node]) -> str:
    for node in nodes:
        if node.kind == "summary" and node.text:
            return collapse(node.text)
    return ""


def _uuid_or_none(value: str | None) -> str | None:
    return value if value and is_session_id(value) else None


def _subagent_name(path: Path, root: Path) -> str:
    meta = path.with_suffix(".meta.json")
    try:
        with open_regular(meta, root=root) as f:
            data = orjson.loads(f.read(1 << 20))
    except (OSError, UnsafePath, orjson.JSONDecodeError):
        return path.stem
    if isinstance(data, dict):
        for key in ("description", "agentType"):
            value = data.get(key)
            if isinstance(value, str):
                # Untrusted text bound for a database column: printable, bounded.
                cleaned = collapse("".join(c if c.isprintable() else " " for c in value), 255)
                if cleaned:
                    return cleaned
    return path.stem
