"""Where a hub keeps each namespace's files, and which namespace a root belongs to.

A namespace (`user@machine`) mirrors the part of the machine's home folder its CLIs
keep sessions in: `<data folder>/hub/<user@machine>/.claude/projects/...`, so the
importer finds them by the same rules as on the machine, and a fork made beside one
lands where the machine's CLI will look for it once pulled.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ...formats import agents
from ...formats.documents import is_document
from ...session_refs import is_namespace
from ..hub_folder import hub_folder as hub_folder
from ..hub_folder import namespace_of as namespace_of

# The longest name a folder on the hub's disk holds (bytes: NAME_MAX of Linux file
# systems), and of a pushed file: its staging and lock files add a dot and five bytes.
MAX_PART = 255
MAX_NAME = MAX_PART - len("..push")


class BadHubPath(ValueError):
    """A pushed path that is not a session file under one of the CLIs' session folders."""


def namespace_folder(namespace: str) -> Path:
    if not is_namespace(namespace):
        raise BadHubPath(f"{namespace!r} is not a namespace (user@machine)")
    return hub_folder() / namespace


def root_folders() -> list[str]:
    """The session folders a push may name, relative to a home: `.claude/projects`, ..."""
    return [f"{a.home_folder}/{folder}" for a in agents() for folder in a.root_folders]


def _session_name(root: str, rest: PurePosixPath) -> bool:
    """Whether `rest` under the session folder `root` is named as a session file there: a
    `.jsonl` name, or one of its CLI's one-document sessions (Gemini CLI's `session-*.json`)
    where that CLI keeps them."""
    if rest.suffix == ".jsonl":
        return True
    return any(
        root == f"{agent.home_folder}/{folder}"
        and is_document(agent.documents, Path(rest))
        and agent.is_session_path(Path(rest))
        for agent in agents()
        for folder in agent.root_folders
    )


def hub_roots() -> list[Path]:
    """Every namespace's session folders on this hub (the ones that exist)."""
    base = hub_folder()
    if not base.is_dir():
        return []
    found: list[Path] = []
    for entry in sorted(base.iterdir()):
        if entry.is_dir() and not entry.is_symlink() and is_namespace(entry.name):
            found.extend(entry / f for f in root_folders() if (entry / f).is_dir())
    return found


def hub_path_check(path: str) -> tuple[str, PurePosixPath]:
    """(root folder, path under it) of a pushed path such as `.claude/projects/p/<id>.jsonl`.

    Only a session file's shape under one of the CLIs' session folders is taken: no `..`,
    no absolute path, no control character, no empty or hidden part below the root
    folder, a `.jsonl` name (or a CLI's one-document session where it keeps them), no
    name longer than the hub's disk holds. `projects//p` and `projects/p` are the same
    path: `hub_path_normal` is its one spelling."""
    if not path or "\\" in path or not path.isprintable() or path.startswith("/"):
        raise BadHubPath(f"{path!r}: a path relative to the machine's home is expected")
    parts = PurePosixPath(path).parts
    if any(p in ("", ".", "..") for p in parts):
        raise BadHubPath(f"{path!r}: no '.' or '..' parts")
    for root in root_folders():
        depth = len(PurePosixPath(root).parts)
        if "/".join(parts[:depth]) == root and len(parts) > depth:
            rest = PurePosixPath(*parts[depth:])
            if any(p.startswith(".") for p in rest.parts[:-1]) or not _session_name(root, rest):
                break
            if len(path) > 1000:
                break
            _lengths_check(rest)
            return root, rest
    raise BadHubPath(
        f"{path!r}: not a session file under {', '.join(root_folders())} (relative to the home)"
    )


def hub_path_normal(path: str) -> str:
    """The one spelling of a pushed path (`a//b/` is `a/b`), as the hub records it."""
    root, rest = hub_path_check(path)
    return f"{root}/{rest}"


def _lengths_check(rest: PurePosixPath) -> None:
    """Names the hub's disk cannot hold are refused here, before anything is made."""
    for part in rest.parts[:-1]:
        if len(part.encode()) > MAX_PART:
            raise BadHubPath(
                f"{part[:40]}...: a folder name of {len(part.encode())} bytes; "
                f"the hub's disk holds at most {MAX_PART} bytes"
            )
    if len(rest.name.encode()) > MAX_NAME:
        raise BadHubPath(
            f"{rest.name[:40]}...: a file name of {len(rest.name.encode())} bytes; "
            f"a hub takes at most {MAX_NAME} bytes"
        )
