"""The hub's side of a push: bytes in only with proof, every file whole or not at all.

A machine pushes a session file in one of two ways:
- **append**: the hub holds the file's first N bytes, and the machine proves it (the
  SHA-256 of the first and of the last bytes of those N, the importer's "grown" proof);
  the new bytes are appended, fsynced, and the file is imported from where it was.
- **staged**: a new file, or one rewritten on the machine (a rewind, a compaction),
  goes to a staging file beside it (a dot name the importer ignores), in chunks that
  each prove the staging file's bytes so far; `commit` checks the whole file's size and
  SHA-256, renames it over the old one in one step, and imports it.

Each chunk names its raw length and SHA-256 and arrives zstd-compressed; a chunk
whose bytes are not the ones announced is refused before anything is written. A
dropped connection leaves a prefix the next push continues from. Only the owner's
tokens push into a namespace (`user@machine`), and every push is audited.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from django.utils import timezone

from ...models import HubFile, HubNamespace, Session
from ...session_refs import is_namespace
from . import indexing, quotas
from .chunks import TooLarge, chunk_decode, chunk_write, max_chunk, max_file, staging_of
from .indexing import NotImported, hub_import, session_catch_up
from .locking import NotAFolder as NotAFolder
from .locking import ProofFailed as ProofFailed
from .locking import PushRefused as PushRefused
from .locking import _folders_make as _folders_make
from .locking import _still_at as _still_at
from .locking import file_lock as file_lock
from .namespaces import BadHubPath, hub_path_check, hub_path_normal, namespace_folder
from .proofs import Held, proofs

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class NotYours(PushRefused):
    status = 403


def namespace_for(user: User, name: str) -> HubNamespace:
    """The namespace `name` (`user@machine`) for a push by `user`: made on first push,
    refused when it is another user's."""
    if not is_namespace(name):
        raise PushRefused(f"{name!r} is not a namespace (user@machine)")
    owner, _, machine = name.partition("@")
    username = user.get_username()
    if owner != username:
        raise NotYours(f"namespace {name} is not yours: this token belongs to {username!r}")
    found, _ = HubNamespace.objects.get_or_create(
        name=name, defaults={"user": user, "machine": machine}
    )
    if found.user_id != user.pk:
        raise NotYours(f"namespace {name} belongs to another user")
    return found


def target_of(namespace: HubNamespace, path: str) -> tuple[Path, Path]:
    """(root folder, file) on the hub for a pushed path; BadHubPath if it is not one."""
    root_name, rest = hub_path_check(path)
    root = namespace_folder(namespace.name) / root_name
    return root, root.joinpath(*rest.parts)


def held(path: Path) -> Held | None:
    """What the hub holds at `path` (None: no such regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise PushRefused(f"{path.name}: cannot be read on the hub ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # checked before fdopen, which refuses a folder
        os.close(fd)
        raise PushRefused(f"{path.name}: not a regular file on the hub")
    with os.fdopen(fd, "rb") as f:
        return proofs(f, st.st_size)


def files_state(namespace: HubNamespace, paths: list[str]) -> dict[str, dict[str, object]]:
    """For each path the hub holds (or has a staging file of): what it holds, under the
    spelling asked; every spelling of one path is one file (`hub_path_normal`)."""
    spelled: dict[str, list[str]] = {}
    for path in paths:
        try:
            spelled.setdefault(hub_path_normal(path), []).append(path)
        except BadHubPath:
            continue
    state: dict[str, dict[str, object]] = {}
    recorded = dict(namespace.files.filter(path__in=spelled).values_list("path", "size"))
    for path, asked in spelled.items():
        root, target = target_of(namespace, path)
        try:
            found, staged = held(target), held(staging_of(target))
        except PushRefused:
            continue  # a folder where the file would be: no file held; its push is refused
        if found is None and staged is None:
            continue
        if found is not None and recorded.get(path) != found.size:
            # Stored, but the hub died before it indexed the file and recorded it.
            try:
                hub_import(root, target)
                pushed_record(namespace, path, found.size)
            except (PushRefused, NotImported):
                pass  # not importable now: tried again at the next push
        entry: dict[str, object] = found.as_json() if found else {}
        if staged is not None:
            entry["staging"] = staged.as_json()
        for spelling in asked:
            state[spelling] = entry
    return state


def chunk_receive(
    namespace: HubNamespace,
    path: str,
    *,
    body: bytes,
    length: int,
    sha256: str,
    offset: int,
    head: str,
    tail: str,
    staged: bool,
) -> int:
    """Add the chunk (`body`, zstd; `length` raw bytes whose SHA-256 is `sha256`) at
    `offset` of the file (or of its staging file); returns the new size.

    At offset 0 a staging file starts over; elsewhere the bytes held must be `offset`
    long and match the proof (`head`, `tail`). The namespace's quota is checked on the
    announced length before a byte is decompressed. An append is imported at once. A
    refused chunk makes nothing: no staging file, no folder."""
    path = hub_path_normal(path)
    root, target = target_of(namespace, path)
    if length > max_chunk():
        raise TooLarge(f"a chunk holds at most {max_chunk()} bytes, not {length}")
    if offset + length > max_file():
        raise TooLarge(f"a session file on this hub holds at most {max_file()} bytes")
    if not staged and offset == 0:
        raise PushRefused("a new or rewritten file is pushed staged, then committed")
    # A staging file started over frees what it held.
    frees = quotas.held_of(namespace, path)[1] if staged and offset == 0 else 0
    with quotas.room_for(namespace, adds=length, frees=frees):
        raw = chunk_decode(body, length=length, sha256=sha256)
        size = chunk_write(namespace, path, target, raw, offset, Held(offset, head, tail), staged)
        if staged:
            quotas.held_record(namespace, path, staged=size)
        else:
            quotas.held_record(namespace, path, stored=size)
    if not staged:
        # Indexed first, then recorded: a hub killed between the two is caught up by the
        # next push's state (`files_state`), which finds the record behind the file.
        hub_import(root, target)
        pushed_record(namespace, path, size)
    return size


def commit(namespace: HubNamespace, path: str, *, size: int, sha256: str) -> Session:
    """Put a staged file in place of the old one (or as a new one), whole and checked."""
    path = hub_path_normal(path)
    root, target = target_of(namespace, path)
    staging = staging_of(target)
    with file_lock(path, target):
        try:
            fd = os.open(staging, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ProofFailed(f"{path}: nothing staged to commit; push it again") from None
        except OSError as exc:
            raise PushRefused(f"{path}: cannot be read on the hub ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or not _still_at(staging, st):
                raise ProofFailed(f"{path}: the staged file changed on the hub; push it again")
            if st.st_size != size:
                raise ProofFailed(f"{path}: the staged file is not {size} bytes long")
            whole = hashlib.sha256()
            while block := f.read(1 << 20):
                whole.update(block)
            if whole.hexdigest() != sha256:
                raise ProofFailed(f"{path}: the staged file's SHA-256 is not the one announced")
            try:
                os.replace(staging, target)
            except IsADirectoryError:
                raise NotAFolder(f"{path}: the hub holds a folder of that name") from None
        folder_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)
    quotas.held_record(namespace, path, stored=size, staged=0)
    session = hub_import(root, target, catch_up=size <= indexing.INLINE_CATCH_UP)
    pushed_record(namespace, path, size)  # after the import: see chunk_receive
    return session


def catch_up(namespace: HubNamespace, path: str) -> Session:
    """Search words and usage of a pushed file whose commit indexed its records only."""
    path = hub_path_normal(path)
    _, target = target_of(namespace, path)
    session = Session.objects.filter(namespace=namespace.name, path=str(target)).first()
    if session is None:
        raise ProofFailed(f"{path}: the hub holds no such session; push it again")
    session_catch_up(session)
    return session


def pushed_record(namespace: HubNamespace, path: str, size: int) -> None:
    HubFile.objects.update_or_create(
        namespace=namespace, path=path, defaults={"size": size, "stored": size}
    )
    HubNamespace.objects.filter(pk=namespace.pk).update(last_push_at=timezone.now())
