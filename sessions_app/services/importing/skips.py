"""Files an import leaves out on purpose: said once, never a failure, not opened again.

A `*.jsonl` file whose name is no session id, or whose session id is already
imported from another file, is left out (but the `.jsonl` the CLI went on in from an
imported one-document file takes that session over, and so does a bigger file of a
Gemini session whose file imported first was a resume's turnless stub). That is no error
(trying again would not change it), so it goes to the report's `left_out`, and the file's
size, mtime and inode are remembered (`SkippedFile`): while they stay the same, later imports pass
the file over without opening it and without saying it again, as they do with an
unchanged session file. A file that changes is looked at again.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path

from ...formats import agent_for
from ...models import Session, SkippedFile
from ..discovery import SessionFile
from ..hub_folder import namespace_of
from .report import ImportReport

FileState = tuple[int, int, int]  # size, mtime_ns, inode


class LeftOut:
    """What earlier imports left out, and which file each imported session id came from."""

    def __init__(self) -> None:
        self.remembered: dict[str, FileState] = {
            path: (size, mtime, inode)
            for path, size, mtime, inode in SkippedFile.objects.values_list(
                "path", "size", "mtime_ns", "inode"
            )
        }
        self.seen: set[str] = set()
        # Loaded when a file not imported before shows up: an unchanged pass needs none.
        # By (namespace, id): on a hub, the same id from two machines is two sessions.
        self._owners: dict[tuple[str, uuid.UUID], str] | None = None

    def misnamed(self, paths: Iterable[Path], report: ImportReport) -> None:
        """Say (once, until it changes) that each of `paths` is no session file."""
        for path in paths:
            report.files += 1
            self.pass_over(path, f"{path}: skipped, the file name is not a session id", report)

    def passed_over(self, source: SessionFile, report: ImportReport) -> bool:
        """Whether `source`, a file not imported before, is left out: its session id came
        from another file (which stays the session's), or it was left out and is unchanged."""
        path = str(source.path)
        if path in self.remembered and self._unchanged(path, report):
            return True
        namespace = namespace_of(source.root)
        owner = self._owner(source.session_id, namespace)
        if owner is None or owner == path:
            return False
        if _continues(source, owner) or _outgrows_a_stub(source, owner):
            # The CLI resumed the one-document file and goes on in this one, or the file
            # imported first was the stub a resume leaves (Gemini CLI): the session moves
            # here and is read again from it (another inode: read whole).
            Session.objects.filter(path=owner, is_subagent=False).update(path=path)
            assert self._owners is not None and source.session_id is not None
            self._owners[(namespace, _uuid(source.session_id))] = path
            return False
        message = f"{path}: session id already imported from {owner}; skipped"
        return self.pass_over(source.path, message, report)

    def imported(self, session: Session) -> None:
        """`session` was imported from its file: a later file with its id is left out."""
        if self._owners is not None and not session.is_subagent:
            key = (session.namespace, _uuid(session.session_id))
            self._owners.setdefault(key, session.path)
        if session.path in self.remembered:  # left out before, a session now
            SkippedFile.objects.filter(path=session.path).delete()
            del self.remembered[session.path]

    def forget_gone(self) -> None:
        """Forget the left-out files that are no longer there: one that comes back is new."""
        gone = [p for p in self.remembered if p not in self.seen and not os.path.lexists(p)]
        if gone:
            SkippedFile.objects.filter(path__in=gone).delete()

    def pass_over(self, path: Path, message: str, report: ImportReport) -> bool:
        """Leave `path` out, saying `message` unless it is unchanged since it was said; True."""
        key = str(path)
        self.seen.add(key)
        if key in self.remembered and self._unchanged(key, report):
            return True
        try:
            stat = os.lstat(path)
        except OSError:
            return True  # gone since the listing: nothing to say about it
        state = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
        report.left_out.append(message)
        SkippedFile.objects.update_or_create(
            path=key,
            defaults={"size": state[0], "mtime_ns": state[1], "inode": state[2], "reason": message},
        )
        self.remembered[key] = state
        return True

    def _unchanged(self, path: str, report: ImportReport) -> bool:
        self.seen.add(path)
        try:
            stat = os.lstat(path)
        except OSError:
            return False
        if (stat.st_size, stat.st_mtime_ns, stat.st_ino) != self.remembered[path]:
            return False
        report.skipped += 1
        return True

    def _owner(self, session_id: str | None, namespace: str) -> str | None:
        if session_id is None:
            return None  # a subagent transcript: its id is its owner's
        if self._owners is None:
            self._owners = {
                (namespace, _uuid(sid)): path
                for sid, namespace, path in Session.objects.filter(is_subagent=False).values_list(
                    "session_id", "namespace", "path"
                )
            }
        return self._owners.get((namespace, _uuid(session_id)))


def _continues(source: SessionFile, owner: str) -> bool:
    """Whether `source` is the file the CLI went on in from the document at `owner`."""
    documents = agent_for(source.agent).documents
    if documents is None or not owner.endswith(documents.suffix):
        return False
    return documents.continuation(Path(owner)) == source.path


def _outgrows_a_stub(source: SessionFile, owner: str) -> bool:
    """Whether the session's file `owner` is a turnless stub of a CLI whose file names hold
    part of the id (Gemini CLI: a resume starts a file for its minute, its first line and
    the context alone) and `source`, with the same id, is bigger: it holds the session.
    Bigger, not only different, so two stubs never take a session from each other."""
    if agent_for(source.agent).head_session_id is None:
        return False
    if Session.objects.filter(path=owner, is_subagent=False, turn_count__gt=0).exists():
        return False
    try:
        return os.lstat(source.path).st_size > os.lstat(owner).st_size
    except OSError:
        return False


def _uuid(value: str | uuid.UUID) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)
