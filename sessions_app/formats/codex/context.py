"""What Codex tells the model in the user's or developer's name, said in words, pure.

Codex writes context for the model as messages of their own: the environment
(`<environment_context>`), AGENTS.md, sandbox rules (`<permissions instructions>`),
the collaboration mode, a model switch with the new model's whole system prompt, a
sub-agent's report (`<subagent_notification>` holding JSON), an interrupted turn, a
review's result (`<user_action>`) and more with each release. None is a prompt: the
page folds each under a line that says what it is, and search finds those words.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..kinds import collapse

# Tags Codex wraps its context in, and what each is, in words.
LABELS = {
    "environment_context": "Environment Codex sent the model (folder, shell, sandbox)",
    "user_instructions": "Project instructions (AGENTS.md) sent to the model",
    "INSTRUCTIONS": "Project instructions (AGENTS.md) sent to the model",
    "permissions instructions": "Sandbox and approval rules for the model",
    "collaboration_mode": "Collaboration mode for the model",
    "model_switch": "The model was switched: new instructions for it",
    "skills_instructions": "Skills the model may use",
    "apps_instructions": "Apps the model may use",
    "plugins_instructions": "Plugins the model may use",
    "recommended_plugins": "Plugins Codex recommended to the model",
    "app-context": "What the Codex app told the model about itself",
    "turn_aborted": "Codex told the model the turn was interrupted",
    "user_shell_command": "A shell command the user ran, sent to the model",
}
AGENTS_MD = "# AGENTS.md instructions"
IDE_CONTEXT = "# Context from my IDE setup"
OPEN_RE = re.compile(r"\A\s*<([A-Za-z_][A-Za-z_ -]{0,60})>\s*")
INNER_RE = re.compile(r"<([a-z_]+)>\s*(.*?)\s*</\1>", re.S)


def context_of(text: str, role: str = "user") -> tuple[str, str] | None:
    """(what it is, what it says) of context Codex wrote, or None for text it does not know
    (a developer message always is context)."""
    stripped = text.strip()
    if stripped.startswith(AGENTS_MD):
        return LABELS["user_instructions"], _unwrapped(stripped, "INSTRUCTIONS")
    opened = OPEN_RE.match(stripped)
    tag = opened.group(1) if opened else ""
    if tag and stripped.endswith(f"</{tag}>"):
        body = stripped[opened.end() if opened else 0 : -len(f"</{tag}>")].strip()
        if tag == "subagent_notification":
            return _notification(body)
        if tag == "user_action":
            return _user_action(body)
        if tag in LABELS:
            return LABELS[tag], body
        return f"Context Codex sent the model: {tag.replace('_', ' ')}", body
    if role == "developer":
        return "Instructions Codex sent the model", stripped
    return None


def _unwrapped(text: str, tag: str) -> str:
    return text.replace(f"<{tag}>", "").replace(f"</{tag}>", "").strip()


def _notification(body: str) -> tuple[str, str]:
    """A sub-agent's report: `{"agent_path": ..., "status": {"completed": "..."}}`."""
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "A sub-agent's report to the model", body
    if not isinstance(data, dict):
        return "A sub-agent's report to the model", body
    agent = str(data.get("agent_path") or data.get("agent_id") or "")
    status = data.get("status")
    said, what = "", "reported"
    if isinstance(status, dict) and status:
        what, value = next(iter(status.items()))
        said = value if isinstance(value, str) else orjson.dumps(value).decode()
    elif isinstance(status, str):
        what = status
    name = f"Sub-agent {agent}" if agent else "A sub-agent"
    return collapse(f"{name} {what}", 200), said


def _user_action(body: str) -> tuple[str, str]:
    """What the user did in Codex's interface (a review), told to the model."""
    inner = {m.group(1): m.group(2) for m in INNER_RE.finditer(body)}
    action = inner.get("action", "").strip()
    label = "Review result" if action == "review" else f"User action: {action or 'unknown'}"
    return label, inner.get("results", body).strip()
