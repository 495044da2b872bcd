"""What a machine sends its hub: the session files under its roots, new bytes only.

Each file is named on the hub by its path under the machine's home (`.claude/projects/
<project>/<id>.jsonl`). For each, the hub says what it holds; then:
- the same bytes: nothing goes;
- a start of this file (same size and proof of its first bytes): the rest is appended;
- anything else (new, or rewritten here): the file goes whole, staged, then committed.
Chunks are cut at line ends, compressed, and each names its length and SHA-256, so a
push cut off midway is continued by the next, and a repeated push sends nothing.

Only the projects the user lets go leave (`BRANCHBOARD_HUB_PROJECTS`, minus
`BRANCHBOARD_HUB_EXCLUDE`), and only session files: never a link, never a file
outside the roots, never the CLIs' own settings or credentials.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import orjson
from django.conf import settings

from ...formats import agents
from ..discovery import RootError, SessionFile, discover
from ..roots import open_regular
from .batching import push_batched
from .client import LONG_TIMEOUT, Hub, HubError
from .namespaces import BadHubPath, hub_folder, hub_path_check
from .proofs import Held, proofs

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

CHUNK = 8 << 20  # raw bytes per request at most (BRANCHBOARD_HUB_PUSH_CHUNK changes it)
STATE_BATCH = 500
CWD_RE = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Local:
    """A session file of this machine, and its name on the hub."""

    path: Path
    root: Path
    hub_path: str
    project: str  # its project's folder (the cwd), for the include and exclude lists


@dataclass
class PushReport:
    sent_files: list[str] = field(default_factory=list)
    up_to_date: int = 0
    bytes_sent: int = 0  # raw bytes
    wire_bytes: int = 0  # compressed
    left_out: list[str] = field(default_factory=list)  # by the include or exclude list
    problems: list[str] = field(default_factory=list)
    planned: list[tuple[str, str]] = field(default_factory=list)  # (what, path) on a dry run
    notes: list[str] = field(default_factory=list)  # what the user should know, not failures


def root_key(root: Path) -> str | None:
    """The name a configured root has on the hub (`.claude/projects`), None for a root
    that is none of the CLIs' own session folders."""
    real = root.resolve()
    for agent in agents():
        for folder in agent.root_folders:
            default = agent.home(os.environ, Path.home()) / folder
            if default.resolve() == real or (
                real.name == folder and real.parent.name == agent.home_folder
            ):
                return f"{agent.home_folder}/{folder}"
    return None


def local_root(key: str) -> Path | None:
    """Where this machine's CLI looks for the session folder named `key` on the hub."""
    for agent in agents():
        for folder in agent.root_folders:
            if key == f"{agent.home_folder}/{folder}":
                return agent.home(os.environ, Path.home()) / folder
    return None


def local_files(report: PushReport) -> list[Local]:
    """This machine's session files that may go, by the include and exclude lists."""
    found: list[Local] = []
    hub = hub_folder().resolve()
    for configured in settings.SESSION_ROOTS:
        root = Path(configured)
        if not root.exists() or root.resolve().is_relative_to(hub):
            continue
        key = root_key(root)
        if key is None:
            report.problems.append(f"{root}: not a CLI's own session folder; not pushed")
            continue
        try:
            files, problems, _ = discover(root)
        except RootError as exc:
            report.problems.append(str(exc))
            continue
        report.problems.extend(problems)
        for source in files:
            local = _local(source, key)
            try:
                hub_path_check(local.hub_path)  # the hub's own rule: said before sending
            except BadHubPath as exc:
                report.problems.append(f"{local.path}: not pushed: {exc}")
                continue
            if _may_go(local.project):
                found.append(local)
            else:
                report.left_out.append(str(local.path))
    return found


def _local(source: SessionFile, key: str) -> Local:
    relative = source.path.relative_to(source.root).as_posix()
    return Local(source.path, source.root, f"{key}/{relative}", _project_of(source))


def _project_of(source: SessionFile) -> str:
    """The folder the session ran in, from the first `cwd` its file names."""
    try:
        with open_regular(source.path, root=source.root) as f:
            head = f.read(1 << 16)
    except OSError:
        head = b""
    if match := CWD_RE.search(head):
        try:
            return str(orjson.loads(b'"' + match.group(1) + b'"'))
        except orjson.JSONDecodeError:
            pass
    return str(source.project_folder)


def _may_go(project: str) -> bool:
    def matches(patterns: Iterable[str]) -> bool:
        return any(
            fnmatch.fnmatchcase(project, p) or fnmatch.fnmatchcase(project, p.rstrip("/") + "/*")
            for p in patterns
        )

    return matches(settings.HUB_PROJECTS) and not matches(settings.HUB_EXCLUDE)


def chunk_size() -> int:
    """Raw bytes per request at most: BRANCHBOARD_HUB_PUSH_CHUNK, else CHUNK (8 MB)."""
    said = os.environ.get("BRANCHBOARD_HUB_PUSH_CHUNK", "")
    try:
        size = int(said) if said else CHUNK
    except ValueError:
        raise ValueError(f"BRANCHBOARD_HUB_PUSH_CHUNK={said!r}: a number of bytes") from None
    return max(1, size)


def _held(entry: object) -> Held | None:
    if not isinstance(entry, dict) or "size" not in entry:
        return None
    return Held(int(entry["size"]), str(entry.get("head", "")), str(entry.get("tail", "")))


def push(
    hub: Hub,
    *,
    dry_run: bool = False,
    only: Iterable[Path] | None = None,
    said: Callable[[str], None] = lambda _: None,
) -> PushReport:
    """Bring the hub up to date with this machine's session files (or those in `only`)."""
    report = PushReport()
    files = local_files(report)
    twins = _twins(files, report)
    if only is not None:
        wanted = {Path(p) for p in only}
        files = [f for f in files if f.path in wanted]
    for start in range(0, len(files), STATE_BATCH):
        batch = files[start : start + STATE_BATCH]
        state = hub.json(
            "POST", "state", body=orjson.dumps({"paths": [f.hub_path for f in batch]})
        )["files"]
        # Small new files first, many to a request (batching); the rest one by one.
        done = set() if dry_run else push_batched(hub, batch, state, report, said, chunk_size())
        for local in batch:
            if local.hub_path in done:
                continue
            try:
                _push_file(hub, local, state.get(local.hub_path) or {}, report, dry_run, said)
            except (OSError, ValueError) as exc:
                report.problems.append(f"{local.path}: {exc}")
            except HubError as exc:
                if not exc.status:
                    raise  # the hub is away: the rest would fail too
                if exc.status == 422 and local.path in twins:
                    continue  # stored, not shown: the note from _twins says why
                report.problems.append(f"{local.path}: {exc}")  # this file only
    return report


def _twins(files: list[Local], report: PushReport) -> set[Path]:
    """The files whose session id is also in another project folder of the same root: the
    hub shows one session per id and machine, so the others are kept there but not shown.
    One note per id says so."""
    by_id: dict[tuple[str, str], list[Local]] = {}
    for local in files:
        parts = PurePosixPath(local.hub_path).parts
        if len(parts) == 4:  # <cli home>/<root>/<project>/<id>.jsonl: a session, not a subagent
            by_id.setdefault((parts[0] + parts[1], local.path.stem), []).append(local)
    twins: set[Path] = set()
    for (_, session_id), same in by_id.items():
        if len(same) < 2:
            continue
        folders = ", ".join(str(local.path.parent) for local in same)
        report.notes.append(
            f"session {session_id} is in {len(same)} project folders on this machine "
            f"({folders}): the hub keeps every file but shows one session per id from a "
            "machine, the one it received first; rename or remove the copy you do not need "
            "to see the other"
        )
        twins.update(local.path for local in same)
    return twins


def _chunks(
    f: BinaryIO, at: int, size: int, whole: hashlib._Hash
) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The chunks of bytes `at`..`size`, cut at line ends: their request's parameters
    (offset, length, digest, the proof of the bytes before) and their zstd frame."""
    most = chunk_size()
    while at < size:
        proof = proofs(f, at)
        f.seek(at)
        block = f.read(min(most, size - at))
        if not block:
            raise ValueError("the file shrank while it was read")
        cut = block.rfind(b"\n") + 1 if at + len(block) < size else len(block)
        block = block[: cut or len(block)]
        whole.update(block)
        params: dict[str, Any] = {
            "offset": at,
            "length": len(block),
            "sha256": hashlib.sha256(block).hexdigest(),
            "head": proof.head,
            "tail": proof.tail,
        }
        yield params, zstd.compress(block, level=3)
        at += len(block)


def _push_file(
    hub: Hub,
    local: Local,
    entry: dict,
    report: PushReport,
    dry_run: bool,
    said: Callable[[str], None],
) -> None:
    with open_regular(local.path, root=local.root) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return
        size = st.st_size  # what this pass sends; what is written after goes next time
        held, staged = _held(entry), _held(entry.get("staging"))
        if held is not None and held.size <= size and proofs(f, held.size) == held:
            if held.size == size:
                report.up_to_date += 1
                return
            what, offset, is_staged = f"append {size - held.size} bytes", held.size, False
        elif staged is not None and staged.size <= size and proofs(f, staged.size) == staged:
            what, offset, is_staged = "continue the whole file", staged.size, True
        else:
            what = "new" if held is None else "whole again (rewritten here)"
            offset, is_staged = 0, True
        if dry_run:
            report.planned.append((what, local.hub_path))
            return
        said(f"{local.hub_path}: {what}")
        whole = hashlib.sha256()
        if is_staged and offset:
            f.seek(0)
            left = offset
            while left:
                block = f.read(min(left, 1 << 20))
                if not block:
                    raise ValueError("the file shrank while it was read")
                whole.update(block)
                left -= len(block)
        chunks = _chunks(f, offset, size, whole)
        # The next chunk is read, hashed and compressed while the hub takes this one.
        with ThreadPoolExecutor(max_workers=1) as ahead:
            coming = ahead.submit(next, chunks, None)
            while (chunk := coming.result()) is not None:
                coming = ahead.submit(next, chunks, None)
                params, packed = chunk
                params.update(path=local.hub_path, staged="1" if is_staged else "0")
                hub.json("POST", "chunk", params, body=packed, content_type="application/zstd")
                report.bytes_sent += params["length"]
                report.wire_bytes += len(packed)
        if is_staged:
            params = {"path": local.hub_path, "size": size, "sha256": whole.hexdigest()}
            done = hub.json("POST", "commit", params, body=b"", timeout=LONG_TIMEOUT)
            if not done.get("caught_up", True):
                # A big file: its search words and usage in a request of their own.
                params = {"path": local.hub_path}
                hub.json("POST", "catch-up", params, body=b"", timeout=LONG_TIMEOUT)
        report.sent_files.append(local.hub_path)
