"""Carrying a session on in the real CLI, pure: the permission modes and each CLI's command line.

A run is `<cli> ... --resume <id>` in print mode with streamed JSON output, the
permission mode chosen for that run, the model if one was picked, and the prompt
as one argument (never through a shell). The flags were read from the CLIs'
own `--help` (claude 2.1.328, qwen 0.24.4, codex 0.169.0) and tried against them
(tests/compat, tests/browser/test_runs_browser.py):

- claude: `-p --resume ID --output-format stream-json --verbose --permission-mode
  M [--model X] -- PROMPT` (stream-json in print mode needs `--verbose`; `--`
  keeps a prompt that starts with "-" a prompt);
- qwen: `--resume ID --output-format stream-json --approval-mode M [--model X]
  --prompt=PROMPT` (its positional prompt does not come after `--`; the `=` form
  keeps a leading "-" part of the value);
- codex: `exec resume ID --json --skip-git-repo-check <mode flags> [-m X] -- PROMPT`.
  `codex exec` is non-interactive and its `resume` takes neither `--sandbox` nor
  `--ask-for-approval` (0.169 has no `-a`/`--full-auto` on exec at all), so the mode
  is given as the config keys they set: plan = `sandbox_mode="read-only"`, edits =
  `sandbox_mode="workspace-write"` (edits inside the session's folder; commands
  sandboxed), both with `approval_policy="never"` (a command that would need an
  approval fails instead of waiting for a person who is not there); full =
  `--dangerously-bypass-approvals-and-sandbox`. `--skip-git-repo-check`: the session
  already ran in that folder. The model provider and its base URL are the user's
  own (`$CODEX_HOME/config.toml`, e.g. `openai_base_url`), as for `codex` typed by hand;
- gemini (0.61.0): `--resume ID --output-format stream-json --approval-mode M
  --skip-trust [--model X] --prompt=PROMPT` (`--prompt`/`-p` is its non-interactive mode;
  `--skip-trust` trusts the session's folder for this run: in a folder never trusted it
  exits 55 without it; the `=` form as for qwen).

Each CLI's JSON event stream is read by `run_event`, which knows the events by their
shape: claude's `result`/`system` events, codex's `error` and `turn.failed`, gemini's
`result` with `status: error` (its `error` events are notes, as codex's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROMPT_LIMIT = 100_000  # characters: far above any typed prompt, far below argv's limit
MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]{0,127}")


@dataclass(frozen=True)
class Mode:
    """A permission mode a run may be given, as the page offers it."""

    key: str
    label: str
    warning: str = ""


MODES = {
    mode.key: mode
    for mode in (
        Mode("plan", "Plan only: it reads and answers, changes nothing"),
        Mode("edits", "Accept file edits (commands that need approval are refused)"),
        Mode(
            "full",
            "Full access: every tool, shell commands included",
            warning="The agent may run any command, as the user the dashboard runs as.",
        ),
    )
}


class BadRunInput(ValueError):
    """A prompt, mode or model a run cannot be given; the message says why."""


def check_run_input(prompt: str, mode: str, model: str) -> tuple[str, str, str]:
    """The prompt, mode and model of a run, checked (BadRunInput says what is wrong)."""
    if not prompt.strip():
        raise BadRunInput("the prompt is empty")
    if len(prompt) > PROMPT_LIMIT:
        raise BadRunInput(f"the prompt is over {PROMPT_LIMIT:,} characters")
    if "\x00" in prompt:
        raise BadRunInput("the prompt holds a NUL character")
    if mode not in MODES:
        raise BadRunInput(f"the permission mode is one of {', '.join(MODES)}, not {mode!r}")
    model = model.strip()
    if model and not MODEL_RE.fullmatch(model):
        raise BadRunInput(f"{model!r} is not a model name (letters, digits, . _ : / @ - [ ])")
    return prompt, mode, model


def claude_run_args(*, session_id: str, prompt: str, mode: str, model: str) -> list[str]:
    """Claude Code's arguments (after the command) to carry session `session_id` on."""
    flag = {"plan": "plan", "edits": "acceptEdits", "full": "bypassPermissions"}[mode]
    args = ["-p", "--resume", session_id, "--output-format", "stream-json", "--verbose"]
    args += ["--permission-mode", flag]
    if model:
        args += ["--model", model]
    return [*args, "--", prompt]


def qwen_run_args(*, session_id: str, prompt: str, mode: str, model: str) -> list[str]:
    """Qwen Code's arguments (after the command) to carry session `session_id` on."""
    flag = {"plan": "plan", "edits": "auto-edit", "full": "yolo"}[mode]
    args = ["--resume", session_id, "--output-format", "stream-json", "--approval-mode", flag]
    if model:
        args += ["--model", model]
    return [*args, f"--prompt={prompt}"]


CODEX_MODES = {
    "plan": ["-c", 'sandbox_mode="read-only"', "-c", 'approval_policy="never"'],
    "edits": ["-c", 'sandbox_mode="workspace-write"', "-c", 'approval_policy="never"'],
    "full": ["--dangerously-bypass-approvals-and-sandbox"],
}


def codex_run_args(*, session_id: str, prompt: str, mode: str, model: str) -> list[str]:
    """Codex CLI's arguments (after the command) to carry session `session_id` on."""
    args = ["exec", "resume", session_id, "--json", "--skip-git-repo-check", *CODEX_MODES[mode]]
    if model:
        args += ["-m", model]
    return [*args, "--", prompt]


GEMINI_MODES = {"plan": "plan", "edits": "auto_edit", "full": "yolo"}


def gemini_run_args(*, session_id: str, prompt: str, mode: str, model: str) -> list[str]:
    """Gemini CLI's arguments (after the command) to carry session `session_id` on."""
    args = ["--resume", session_id, "--output-format", "stream-json"]
    args += ["--approval-mode", GEMINI_MODES[mode], "--skip-trust"]
    if model:
        args += ["--model", model]
    return [*args, f"--prompt={prompt}"]


@dataclass(frozen=True)
class RunEvent:
    """What one streamed event says about a run: the CLI failed, or it waits and retries."""

    failure: str = ""
    note: str = ""


def run_event(event: dict) -> RunEvent | None:
    """What a CLI's streamed JSON event says about the run (None: nothing to note)."""
    kind = event.get("type")
    if kind == "result" and event.get("is_error"):  # claude, qwen
        error = event.get("result") or event.get("error") or event.get("subtype") or ""
        return RunEvent(failure=str(error))
    if kind == "system" and event.get("subtype") == "api_retry":  # claude: it waits, retries
        delay = event.get("retry_delay_ms")
        wait = f" in {delay / 1000:.0f} s" if isinstance(delay, (int, float)) else ""
        return RunEvent(
            note=f"The API answered {event.get('error_status')} ({event.get('error')}); the CLI "
            f"tries again{wait} (attempt {event.get('attempt')} of {event.get('max_retries')})."
        )
    if kind == "result" and event.get("status") == "error":  # gemini
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        return RunEvent(failure=str(message or "the run failed"))
    if kind == "turn.failed":  # codex: the turn ended on an error
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        return RunEvent(failure=str(message or "the turn failed"))
    if kind == "error":  # codex: a stream error it may retry ("Reconnecting... 2/5")
        return RunEvent(note=f"The CLI said: {event.get('message')}")
    return None


def shown_command(cli: str, args: list[str], prompt: str) -> list[str]:
    """The command line as a run keeps it: the prompt (kept apart) named, not repeated."""
    named = f"<prompt, {len(prompt)} characters>"
    shown = []
    for arg in args:
        if arg == prompt:
            shown.append(named)
        elif arg == f"--prompt={prompt}":
            shown.append(f"--prompt={named}")
        else:
            shown.append(arg)
    return [cli, *shown]
