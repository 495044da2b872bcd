"""Where a hub keeps the files machines push, and which namespace a root belongs to.

Below the importer (which names each session's namespace as it reads it) and the hub
package (which checks what is pushed and where it lands: `hub/namespaces.py`).
"""

from __future__ import annotations

import functools
from pathlib import Path

from django.conf import settings

from ..session_refs import is_namespace


def hub_folder() -> Path:
    """Where a hub keeps the files machines push: `<data folder>/hub`."""
    return Path(settings.DATA_DIR) / "hub"


def namespace_of(root: Path | str) -> str:
    """The namespace whose folder holds `root`; "" for a root of this machine's own."""
    return _namespace_of(str(root), str(hub_folder()))


# Asked for every file an import reads, of the few roots there are: a root outside the hub
# folder is resolved (a system call per part) once, not once per file.
@functools.lru_cache(maxsize=256)
def _namespace_of(root: str, hub: str) -> str:
    base = Path(hub)
    try:
        relative = Path(root).relative_to(base)
    except ValueError:
        try:
            relative = Path(root).resolve().relative_to(base.resolve())
        except (ValueError, OSError):
            return ""
    name = relative.parts[0] if relative.parts else ""
    return name if is_namespace(name) else ""
