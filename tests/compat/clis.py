"""Install and run the real Claude Code, Qwen Code and Codex CLIs against a FakeModel.

Where each CLI writes its session (verified by test_harness.py):

* claude: `$HOME/.claude/projects/<cwd, every char not in [A-Za-z0-9] replaced
  by '-'>/<sessionId>.jsonl`;
* qwen: `$HOME/.qwen/projects/<cwd, same replacement>/chats/<sessionId>.jsonl`;
* codex: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl`
  (verified by test_codex_harness.py; CODEX_HOME is `$HOME/.codex` here).

Both CLIs get a throwaway HOME and a minimal environment (only PATH, USER and
TMPDIR are inherited), and an HTTP(S) proxy that points at the fake server
itself (loopback excluded by NO_PROXY), so any stray egress attempt is caught
and recorded by the fake server instead of leaving the machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.compat.fake_model import FakeModel

CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_VERSION = "2.1.328"
QWEN_PACKAGE = "@qwen-code/qwen-code"
QWEN_VERSION = "0.24.4"
PACKAGES = {CLAUDE_PACKAGE: CLAUDE_VERSION, QWEN_PACKAGE: QWEN_VERSION}
# Its native binary comes as the optional dependency @openai/codex-linux-x64
# (npm alias of @openai/codex@0.169.0-linux-x64), pinned by the main package.
CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.169.0"
CODEX_PACKAGES = {CODEX_PACKAGE: CODEX_VERSION}
# gpt-5.5 is a model 0.169's built-in catalog offers `exec_command` and the
# freeform `apply_patch` tool to; its default model gets only a JavaScript
# `exec` tool (code mode) instead.
CODEX_MODEL = "gpt-5.5"
CCUSAGE_PACKAGES = {"ccusage": "20.0.24", "@ccusage/ccusage-linux-x64": "20.0.24"}

DEFAULT_TIMEOUT = 120.0
INSTALL_TIMEOUT = 900.0
QWEN_MODEL = "fake-qwen-model"
CLAUDE_TOOLS = "Bash,Read,Write,Edit"


class CompatError(RuntimeError):
    """A CLI could not be installed or did not behave as expected."""


def cache_dir() -> Path:
    """Where the CLIs are installed: $BRANCHBOARD_CLI_CACHE or ~/.cache/branchboard/compat-clis."""
    env = os.environ.get("BRANCHBOARD_CLI_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "branchboard" / "compat-clis"


def _installed_version(prefix: Path, package: str) -> str | None:
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _works(executable: Path) -> bool:
    try:
        proc = subprocess.run(
            [str(executable), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env=_base_env(Path(os.environ.get("TMPDIR", "/tmp"))),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@contextlib.contextmanager
def _locked(prefix: Path) -> Iterator[None]:
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(prefix: Path, packages: dict[str, str]) -> None:
    """Install exactly these package versions under `prefix` unless they are there already."""
    npm = shutil.which("npm")
    stale = [p for p, v in packages.items() if _installed_version(prefix, p) != v]
    if not stale:
        return
    if npm is None:
        raise CompatError(
            "npm is not on PATH: cannot install "
            + ", ".join(f"{p}@{v}" for p, v in packages.items())
            + f" into {prefix}"
        )
    cmd = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--loglevel=error",
        *(f"{p}@{v}" for p, v in packages.items()),
    ]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise CompatError(f"npm install timed out after {INSTALL_TIMEOUT}s") from exc
    if proc.returncode != 0:
        raise CompatError(
            f"npm install failed ({proc.returncode}): {' '.join(cmd)}\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    wrong = {p: _installed_version(prefix, p) for p in packages}
    wrong = {p: v for p, v in wrong.items() if v != packages[p]}
    if wrong:
        raise CompatError(f"npm installed unexpected versions: {wrong}")


def ensure_ccusage() -> Path:
    """Install ccusage (once) and return its command; an independent count of Claude usage.

    20.0.26 cannot run (its native package is published only up to 20.0.24): both pinned.
    """
    prefix = cache_dir()
    with _locked(prefix):
        _npm_install(prefix, CCUSAGE_PACKAGES)
    path = prefix / "node_modules" / ".bin" / "ccusage"
    if not _works(path):
        raise CompatError(f"ccusage at {path} does not run (`{path} --version` failed)")
    return path


def ensure_clis() -> dict[str, Path]:
    """Install both CLIs (once) and return {"claude": path, "qwen": path}."""
    prefix = cache_dir()
    with _locked(prefix):
        _npm_install(prefix, PACKAGES)
        bin_dir = prefix / "node_modules" / ".bin"
        paths = {"claude": bin_dir / "claude", "qwen": bin_dir / "qwen"}
        claude_pkg = prefix / "node_modules" / CLAUDE_PACKAGE
        if not _works(paths["claude"]) and node_available():
            # The npm package ships a stub that its postinstall replaces with the
            # native binary; run that step by hand if npm skipped install scripts.
            subprocess.run(
                ["node", "install.cjs"],
                cwd=claude_pkg,
                capture_output=True,
                timeout=300,
                check=False,
            )
        for name, path in paths.items():
            if not _works(path):
                raise CompatError(f"{name} at {path} does not run (`{path} --version` failed)")
    return paths


def ensure_codex() -> Path:
    """Install the Codex CLI (once) and return its command."""
    prefix = cache_dir()
    with _locked(prefix):
        _npm_install(prefix, CODEX_PACKAGES)
    path = prefix / "node_modules" / ".bin" / "codex"
    if not _works(path):
        raise CompatError(f"codex at {path} does not run (`{path} --version` failed)")
    return path


def node_available() -> bool:
    return shutil.which("node") is not None


# ---------------------------------------------------------------- running


def project_dir_name(cwd: Path | str) -> str:
    """The folder name both CLIs derive from a cwd: non-alphanumerics become '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def claude_session_file(home: Path, cwd: Path, session_id: str) -> Path:
    return home / ".claude" / "projects" / project_dir_name(cwd) / f"{session_id}.jsonl"


def qwen_chats_dir(home: Path, cwd: Path) -> Path:
    return home / ".qwen" / "projects" / project_dir_name(cwd) / "chats"


def qwen_session_file(home: Path, cwd: Path, session_id: str) -> Path:
    return qwen_chats_dir(home, cwd) / f"{session_id}.jsonl"


@dataclass(frozen=True)
class CliHome:
    """A temporary HOME and the project folder (cwd) inside it."""

    home: Path
    cwd: Path


@dataclass
class CliRun:
    """The outcome of one CLI invocation."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    output: Any
    session_id: str | None

    @property
    def result_text(self) -> str | None:
        """The final answer: claude's `result`, or the `result` event's of qwen."""
        events = self.output if isinstance(self.output, list) else [self.output]
        for event in reversed(events):
            if isinstance(event, dict) and event.get("type") == "result":
                result = event.get("result")
                return result if isinstance(result, str) else None
        return None

    def check(self) -> CliRun:
        if self.returncode != 0:
            raise CompatError(
                f"{self.args[0]} exited {self.returncode}\nargs: {self.args}\n"
                f"stdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}"
            )
        return self


def _base_env(home: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "USER": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def _trap_env(fm: FakeModel) -> dict[str, str]:
    """Proxy every non-loopback request to the fake server, which refuses it."""
    proxy = fm.url
    return {
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "http_proxy": proxy,
        "https_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def claude_env(home: Path, fm: FakeModel) -> dict[str, str]:
    env = _base_env(home)
    env.update(_trap_env(fm))
    env.update(
        {
            "ANTHROPIC_BASE_URL": fm.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-loopback-tests",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "IS_SANDBOX": "1",
            # Keep file-history backups in -p mode too, as the interactive CLI does
            # by default: the sessions then carry checkpoint records like real ones.
            "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "1",
        }
    )
    return env


def qwen_env(home: Path, fm: FakeModel) -> dict[str, str]:
    env = _base_env(home)
    env.update(_trap_env(fm))
    env.update(
        {
            "OPENAI_BASE_URL": fm.openai_url,
            "OPENAI_API_KEY": "sk-fake-key-for-loopback-tests",
            "OPENAI_MODEL": QWEN_MODEL,
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        }
    )
    return env


def _write_qwen_settings(home: Path) -> None:
    """Turn off Qwen Code's usage statistics, telemetry and update checks; run its shell
    tool on pipes, not a pseudo-terminal: node-pty may report a fast command's exit
    before its last output is read (once, in CI, `echo hi` gave "Output: (empty)"), and
    with pipes the tool waits for the output to end. The session file is the same."""
    settings = home / ".qwen" / "settings.json"
    if settings.exists():
        return
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        json.dumps(
            {
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "tools": {"shell": {"enableInteractiveShell": False}},
            },
            indent=2,
        )
    )


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise CompatError(
            f"{cmd[0]} timed out after {timeout}s\nargs: {cmd}\n"
            f"stdout: {exc.stdout!r:.3000}\nstderr: {exc.stderr!r:.3000}"
        ) from exc


def _parse_json(text: str) -> Any:
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def run_claude(
    home: Path,
    cwd: Path,
    fm: FakeModel,
    args: Sequence[str],
    *,
    executable: Path | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> CliRun:
    """Run `claude -p ... --output-format json --allowedTools ...` plus `args`.

    `args` is what follows: usually `[prompt]`, or `[prompt, "--resume", id]`.
    The session id comes from the JSON result's `session_id`.
    """
    exe = str(executable or ensure_clis()["claude"])
    cmd = [exe, "-p", *args, "--output-format", "json", "--allowedTools", CLAUDE_TOOLS]
    proc = _run(cmd, cwd, claude_env(home, fm), timeout)
    output = _parse_json(proc.stdout)
    session_id = output.get("session_id") if isinstance(output, dict) else None
    run = CliRun(cmd, proc.returncode, proc.stdout, proc.stderr, output, session_id)
    return run.check() if check else run


def _qwen_session_from_stream(events: Any) -> str | None:
    if isinstance(events, dict):
        events = [events]
    if not isinstance(events, list):
        return None
    for event in events:
        if isinstance(event, dict) and isinstance(event.get("session_id"), str):
            return event["session_id"]
    return None


def run_qwen(
    home: Path,
    cwd: Path,
    fm: FakeModel,
    args: Sequence[str],
    *,
    executable: Path | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> CliRun:
    """Run `qwen -p ... --auth-type openai --yolo --output-format json` plus `args`.

    The session id is the `session_id` of the JSON events qwen prints; if that
    is missing, the newest `chats/*.jsonl` under the project folder.
    """
    exe = str(executable or ensure_clis()["qwen"])
    _write_qwen_settings(home)
    cmd = [exe, "-p", *args, "--auth-type", "openai", "--yolo", "--output-format", "json"]
    proc = _run(cmd, cwd, qwen_env(home, fm), timeout)
    output = _parse_json(proc.stdout)
    session_id = _qwen_session_from_stream(output)
    if session_id is None:
        chats = sorted(
            qwen_chats_dir(home, cwd).glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns
        )
        session_id = chats[-1].stem if chats else None
    run = CliRun(cmd, proc.returncode, proc.stdout, proc.stderr, output, session_id)
    return run.check() if check else run


def codex_home(home: Path) -> Path:
    """The CODEX_HOME the harness gives codex: `$HOME/.codex`, its default."""
    return home / ".codex"


def codex_sessions(home: Path) -> list[Path]:
    """Every rollout file under CODEX_HOME/sessions, oldest name first."""
    return sorted((codex_home(home) / "sessions").glob("*/*/*/rollout-*.jsonl"))


def codex_session_file(home: Path, session_id: str) -> Path:
    """The rollout file whose name ends with this session id."""
    found = [p for p in codex_sessions(home) if p.stem.endswith(session_id)]
    if len(found) != 1:
        raise CompatError(f"expected one rollout for {session_id}, found {found}")
    return found[0]


def codex_env(home: Path, fm: FakeModel) -> dict[str, str]:
    codex_home(home).mkdir(parents=True, exist_ok=True)  # codex refuses a missing CODEX_HOME
    env = _base_env(home)
    env.update(_trap_env(fm))
    env.update({"CODEX_HOME": str(codex_home(home)), "OPENAI_API_KEY": "sk-fake-codex-key"})
    return env


def codex_options(fm: FakeModel) -> list[str]:
    """Options every codex run gets: the fake model and no network side features.

    `openai_base_url` points the built-in `openai` provider at the fake model
    (a thread refuses to resume under another provider than it was recorded
    with); plugins, apps and analytics would otherwise call github.com and
    chatgpt.com at start.
    """
    return [
        "--skip-git-repo-check",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "-m",
        CODEX_MODEL,
        "-c",
        f'openai_base_url="{fm.openai_url}"',
        "-c",
        "analytics.enabled=false",
        "--disable",
        "plugins",
        "--disable",
        "remote_plugin",
        "--disable",
        "apps",
    ]


def codex_events(stdout: str) -> list[dict[str, Any]]:
    """The JSONL events `codex exec --json` printed (other lines skipped)."""
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def run_codex(
    home: Path,
    cwd: Path,
    fm: FakeModel,
    args: Sequence[str],
    *,
    executable: Path | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> CliRun:
    """Run `codex exec [args[0] ...] <codex_options> [rest of args]`.

    `args` is `[prompt]`, `["resume", id, prompt]` or `["fork", id, prompt]`:
    a leading `resume`/`fork` and the id stay in front of the options. The
    session id is the `thread_id` of the `thread.started` event.
    """
    exe = str(executable or ensure_codex())
    args = list(args)
    head = args[:2] if args and args[0] in ("resume", "fork") else []
    cmd = [exe, "exec", *head, *codex_options(fm), *args[len(head) :]]
    proc = _run(cmd, cwd, codex_env(home, fm), timeout)
    events = codex_events(proc.stdout)
    session_id = next((e["thread_id"] for e in events if e.get("type") == "thread.started"), None)
    run = CliRun(cmd, proc.returncode, proc.stdout, proc.stderr, events, session_id)
    return run.check() if check else run


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL session file (blank lines skipped)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
