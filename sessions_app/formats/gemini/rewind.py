"""Gemini CLI's own rewind marker, `{"$rewindTo": <message id>}`, pure.

The CLI's `/rewind` appends it (`ChatRecordingService.rewindTo`, 0.61), and its replay
(`loadConversationRecord`) drops the message it names and every later one, so a marker
naming the user message of prompt N leaves turns 1..N-1 for `gemini --resume`. Checked
with the real CLI, on a file it has resumed too (`tests/compat/test_gemini_rewind_compat.py`).
"""

from __future__ import annotations

import orjson


def rewind_marker(prompt_line: bytes) -> bytes | None:
    """The line that drops the message `prompt_line` holds and all after it (None: no id)."""
    try:
        data = orjson.loads(prompt_line)
    except orjson.JSONDecodeError:
        return None
    message_id = data.get("id") if isinstance(data, dict) else None
    if not isinstance(message_id, str) or not message_id:
        return None
    # As the CLI writes it (`JSON.stringify`): compact, one line.
    return orjson.dumps({"$rewindTo": message_id}) + b"\n"
