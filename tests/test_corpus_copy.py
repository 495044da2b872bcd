"""The shared corpus copy is put back exactly: what `imported` promises every test."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .corpus import CorpusCopy
from .facts import FORKS_TREE, IDEAS_REWIND, QWEN_MID_TURN

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
BIGREPO = "cli/claude/-home-dev-code-bigrepo/ad8024e4-83f0-4ff3-82f8-4e19f6c9127b.jsonl"


def state(root: Path) -> dict[str, tuple]:
    """Everything the index or a test could tell apart: kind, inode, mtime, mode, bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = os.lstat(path)
        data = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
        inode = st.st_ino if stat.S_ISREG(st.st_mode) else 0
        out[str(path.relative_to(root))] = (st.st_mode, inode, st.st_mtime_ns, data)
    return out


def test_restore_undoes_rewinds_appends_additions_and_removals(tmp_path: Path) -> None:
    copy = CorpusCopy(tmp_path)
    before = state(copy.path)
    webapp = copy.path / WEBAPP
    rewound = webapp.with_name(".rewound.tmp")  # a rewind: a new file renamed over the old
    rewound.write_bytes(b"rewound\n")
    os.replace(rewound, webapp)
    with (copy.path / FORKS_TREE).open("ab") as f:  # a CLI appending
        f.write(b'{"type":"user"}\n')
    bigrepo = copy.path / BIGREPO  # other bytes, same size and mtime
    st = bigrepo.stat()
    data = bytearray(bigrepo.read_bytes())
    data[100:108] = b"CHANGED!"
    bigrepo.write_bytes(bytes(data))
    os.utime(bigrepo, ns=(st.st_atime_ns, st.st_mtime_ns))
    (webapp.parent / "fork.jsonl").write_bytes(b"{}\n")
    (copy.path / "cli/claude/-new-project").mkdir()
    (copy.path / "cli/claude/link.jsonl").symlink_to(webapp)
    os.mkfifo(copy.path / "cli/claude/fifo.jsonl")
    (copy.path / QWEN_MID_TURN).unlink()
    (copy.path / IDEAS_REWIND).chmod(0)
    os.utime(copy.path / "cli/qwen")

    copy.restore()

    assert state(copy.path) == before
    copy.restore()  # nothing to do the second time
    assert state(copy.path) == before
