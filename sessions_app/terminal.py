"""Text bound for a terminal: every control character escaped, so nothing printed drives it.

A session's title, cwd, prompt or path, a file name under the roots and a hub's answer
are text from elsewhere. Printed raw, `ESC ]0;…BEL` sets the terminal's title, `ESC [2J`
clears it and OSC 52 writes the clipboard. Every command prints such text through `shown`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Lines of one list a command prints (then "… and N more"): a hub's lists are its to make.
MAX_SHOWN = 50

# C0 and C1 controls and DEL.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The same but for line breaks and tabs: text of several lines (a prompt) keeps its lines.
CONTROLS_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(text: object, *, lines: bool = False) -> str:
    """`text` with every control character escaped (`\\x1b`), safe to print to a terminal;
    with `lines`, line breaks and tabs are kept (a prompt to edit keeps its lines)."""
    controls = CONTROLS_BUT_LINES if lines else CONTROLS
    return controls.sub(lambda m: repr(m.group())[1:-1], str(text))


def shown_list(lines: Sequence[object], most: int = MAX_SHOWN) -> list[str]:
    """At most `most` of `lines`, each `shown` and cut at 2000 characters, and a last line
    saying how many more."""
    out = [shown(line)[:2000] for line in lines[:most]]
    if len(lines) > most:
        out.append(f"… and {len(lines) - most} more")
    return out
