"""The hub's side of a batch: many small new files in one request, indexed in one pass.

A first push of a machine is mostly small files; one request and one import each
(chunk, commit) cost more than their bytes. A batch is one zstd body: a manifest line
(`{"files": [{"path", "size", "sha256"}, ...]}`) then the files' bytes, one after the
other. Each file is checked as a chunk and commit of a whole file is (normalised path
in the owner's namespace, size limit, SHA-256 of its bytes), written under its lock
(`receiving.file_lock`) to a private temporary name, fsynced and linked into place
only where nothing is (exclusive: a file the hub holds is never replaced by a batch).
A refused file writes nothing of itself; the others go on. Only when every stored
file's bytes are safe are they indexed, in one pass over the batch.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import orjson

from ...models import HubNamespace, Session
from ..discovery.at_path import discover_path
from ..importing import ImportReport, projects_refresh, session_file_import
from ..importing.session_row import cli_branches_link
from ..searching.texts_index import texts_index_bulk
from ..watching import CATCH_UP
from . import quotas
from .chunks import ChunkMismatch, TooLarge, max_chunk, max_file, ratio_check
from .locking import NotAFolder, ProofFailed, PushRefused, _folders_make, file_lock
from .namespaces import BadHubPath, hub_path_normal
from .receiving import pushed_record, target_of

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

MAX_FILES = 1000  # files in one batch
MAX_MANIFEST = 1 << 20  # bytes of its manifest line


@dataclass
class Entry:
    """One file of a batch: what was announced, and what became of it."""

    path: str  # as the machine spelled it (the answer's key)
    size: int
    sha256: str
    data: bytes = b""
    normal: str = ""
    root: Path | None = None
    target: Path | None = None
    refused: PushRefused | BadHubPath | None = None


def batch_manifest(body: bytes) -> tuple[list[Entry], Callable[[], None]]:
    """The files a batch body announces, and what reads their bytes into them: only the
    manifest is decompressed here, so a batch past the hub's limits or the namespace's
    quota is refused before its files are inflated. The whole request is refused
    (nothing written) when the body is not what its manifest announces."""
    unpack = zstd.ZstdDecompressor()
    try:
        head = unpack.decompress(body, max_length=MAX_MANIFEST)
    except zstd.ZstdError as exc:
        raise ChunkMismatch(f"the batch is not zstd data ({exc})") from None
    line_end = head.find(b"\n")
    if line_end < 0:
        raise PushRefused("the batch starts with its manifest: one JSON line")
    try:
        manifest = orjson.loads(head[:line_end])
    except orjson.JSONDecodeError:
        raise PushRefused("the batch's manifest is not valid JSON") from None
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, list) or not listed:
        raise PushRefused('the manifest is {"files": [{"path", "size", "sha256"}, ...]}')
    if len(listed) > MAX_FILES:
        raise PushRefused(f"a batch holds at most {MAX_FILES} files")
    entries = []
    for item in listed:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("path"), str)
            and type(item.get("size")) is int
            and item["size"] >= 0
            and isinstance(item.get("sha256"), str)
        ):
            raise PushRefused("each file of the manifest: path (text), size (>= 0), sha256")
        entries.append(Entry(item["path"], item["size"], item["sha256"]))
    announced = sum(e.size for e in entries)
    if announced > max_chunk():
        raise TooLarge(f"a batch holds at most {max_chunk()} bytes of files, not {announced}")
    ratio_check(announced, len(body))

    def contents() -> None:
        # What the manifest announced and one byte more, to tell a longer body: no more.
        data = bytearray(head[line_end + 1 :])
        try:
            if len(data) <= announced and not unpack.eof:
                data += unpack.decompress(b"", max_length=announced + 1 - len(data))
        except zstd.ZstdError as exc:
            raise ChunkMismatch(f"the batch is not zstd data ({exc})") from None
        if len(data) != announced or not (unpack.eof or unpack.needs_input):
            raise ChunkMismatch(
                f"the batch holds {'more than ' if len(data) > announced else ''}"
                f"{len(data)} bytes of files, not the {announced} its manifest announces"
            )
        at = 0
        for entry in entries:
            entry.data = bytes(data[at : at + entry.size])
            at += entry.size

    return entries, contents


def batch_receive(namespace: HubNamespace, body: bytes) -> dict[str, dict[str, object]]:
    """Store each file of the batch that passes its checks, then index the stored ones in
    one pass; the answer says, for each path as spelled, its size or why it was refused."""
    entries, contents = batch_manifest(body)
    seen: set[str] = set()
    with quotas.room_for(namespace, adds=sum(e.size for e in entries)):
        contents()
        for entry in entries:
            try:
                _check(namespace, entry, seen)
                _store(namespace, entry)
            except (PushRefused, BadHubPath) as exc:
                entry.refused = exc
            else:
                quotas.held_record(namespace, entry.normal, stored=entry.size)
    stored = [e for e in entries if e.refused is None]
    _folders_sync({e.target.parent for e in stored if e.target is not None})
    sessions = _index(namespace, stored)
    answer: dict[str, dict[str, object]] = {}
    for entry in entries:
        if entry.refused is not None:
            status = getattr(entry.refused, "status", 400)
            answer[entry.path] = {"error": str(entry.refused), "status": status}
        elif entry.normal not in sessions:
            answer[entry.path] = {
                "error": f"{entry.normal}: stored, but not imported (not a session file)",
                "status": 422,
                "size": entry.size,
            }
        else:
            answer[entry.path] = {
                "size": entry.size,
                "session_id": str(sessions[entry.normal].session_id),
            }
    return answer


def _check(namespace: HubNamespace, entry: Entry, seen: set[str]) -> None:
    entry.normal = hub_path_normal(entry.path)
    entry.root, entry.target = target_of(namespace, entry.normal)
    if entry.normal in seen:
        raise PushRefused(f"{entry.normal}: twice in one batch")
    seen.add(entry.normal)
    if entry.size > max_file():
        raise TooLarge(f"a session file on this hub holds at most {max_file()} bytes")
    if hashlib.sha256(entry.data).hexdigest() != entry.sha256:
        raise ChunkMismatch(f"{entry.normal}: its bytes are not the ones announced (SHA-256)")


def _store(namespace: HubNamespace, entry: Entry) -> None:
    """The file's bytes at its place, fsynced, where no file was; nothing of it when refused."""
    assert entry.target is not None
    target = entry.target
    _folders_make(namespace, target.parent)
    # A dot name the importer passes by, no longer than the staging file's (MAX_NAME).
    temporary = target.with_name(f".{target.name}.bat")
    with file_lock(entry.normal, target):
        if _held_same(target, entry):
            return  # a batch sent again after its answer was lost
        with suppress(FileNotFoundError):
            os.unlink(temporary)  # a hub killed mid-batch; under the lock, no one writes it
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temporary, flags, 0o600)
        except OSError as exc:
            raise PushRefused(
                f"{entry.normal}: cannot be written on the hub ({exc.strerror})"
            ) from None
        try:
            view = memoryview(entry.data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, target, follow_symlinks=False)  # fails where anything is
        except FileExistsError:
            if os.path.isdir(target):
                raise NotAFolder(f"{entry.normal}: the hub holds a folder of that name") from None
            raise ProofFailed(
                f"{entry.normal}: the hub holds another file there; push again"
            ) from None
        finally:
            os.unlink(temporary)


def _held_same(target: Path, entry: Entry) -> bool:
    """Whether the hub holds these very bytes at `target` (a file, not a link)."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise NotAFolder(f"{entry.normal}: the hub holds a file where it has a folder") from None
    if stat.S_ISDIR(st.st_mode):
        raise NotAFolder(f"{entry.normal}: the hub holds a folder of that name")
    if not stat.S_ISREG(st.st_mode) or st.st_size != entry.size:
        raise ProofFailed(f"{entry.normal}: the hub holds another file there; push again")
    with open(target, "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != entry.sha256:
            raise ProofFailed(f"{entry.normal}: the hub holds another file there; push again")
    return True


def _folders_sync(folders: set[Path]) -> None:
    """The new names are on disk before the batch is answered (each folder once)."""
    for folder in folders:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
        finally:
            os.close(fd)


def _index(namespace: HubNamespace, stored: list[Entry]) -> dict[str, Session]:
    """One import pass over the stored files: records, then projects, branches, and
    the search words and usage of them all at once; each indexed file is recorded."""
    report = ImportReport()
    sessions: dict[str, Session] = {}
    sources = []
    for entry in stored:
        assert entry.root is not None and entry.target is not None
        found, _, _ = discover_path(entry.root, entry.target)
        sources += [(source, entry.normal) for source in found]
    # Sessions first, so a subagent's file finds its parent imported (as the import does).
    # A first push: the texts' trigram index is built once after the batch, not row by row.
    with texts_index_bulk(sum(entry.size for entry in stored)):
        for source, normal in sorted(sources, key=lambda pair: pair[0].is_subagent):
            session = session_file_import(source=source, report=report)
            if session is not None:
                sessions[normal] = session
    if not sessions:
        return sessions
    projects_refresh(project_ids={s.project_id for s in sessions.values()})
    cli_branches_link(report.unlinked)
    ids = [s.pk for s in sessions.values()]
    for _, refresh in CATCH_UP:
        refresh(session_ids=ids)
    for entry in stored:
        if entry.normal in sessions:  # after its import: see receiving.chunk_receive
            pushed_record(namespace, entry.normal, entry.size)
    return sessions
