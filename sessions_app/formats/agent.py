"""The agent interface: everything that differs between the CLIs, one object per agent.

Code outside `formats/` asks `agent_for(session.agent)` and uses what it gets; it
never compares an agent's name. A new agent is one new package in `formats/`
(plus fixtures and tests) that ends with `AGENT = Agent(...)`, and one line adding
that module's `AGENT` to `REGISTRY` in `formats/__init__.py`. Its module provides:

- `parse_line(raw: bytes) -> ParsedRecord`: one line, normalised to the record
  kinds of `formats/__init__.py` (PROMPT, ASSISTANT, TOOL_RESULT, REWIND ...);
  never raises (an undecodable line is kind INVALID; `common.load` does that).
  It runs once per line of 300 MB files, so it stays lean: it may try a
  selective decode first (`claude.index.parse_indexed`) whose record, where it
  gives one, equals the full read's.
- `message_text(message) -> str`: the human-readable text of a record's `message`,
  and `record_text(data) -> str`: the same for a whole record (its parsed line).
- `content_blocks(data) -> list[dict]`: the blocks of a record's message.
- `image_of(block) -> (media type, base64 data) | None`: an image a block holds
  (the transcript checks both before showing it).
- `assistant_parts(data) -> list[AssistantPart]`: text, thinking and tool calls of
  an assistant record, in order.
- `tool_results(data) -> list[ToolOutcome]`: the tool results a record carries.
- `title_line(*, session_id, title, parent_uuid, base) -> bytes`: the agent's own
  record naming a session (`base` holds cwd/version/gitBranch of the source).
- `rewind_line(*, session_id, parent_uuid, removed_turns, undo, base) -> bytes`,
  or None: the CLI's own rewind marker. With one, a rewind (and its undo) only
  appends, which needs `leaf_rule` LAST_RECORD; without one, the file is
  rewritten after a backup of the whole file.
- `rewind_marker(prompt_line) -> bytes | None`, or None: for a CLI whose own rewind
  marker names the first message it drops (Gemini CLI's `{"$rewindTo": id}`), that
  marker made from the line of the prompt a rewind goes back before (None: the line
  names no message). A rewind appends it (LAST_RECORD too); its undo cuts it away.
- the data: `name` (stored in the database, at most 16 characters), `label`,
  `cli` (command name: `<cli> <resume_word> <id>`), `home_folder` (`~/<home_folder>/
  projects` is the default session root), `sessions_subfolder` (session files lie in
  `<project>/<sessions_subfolder>/`; "" for the project folder itself, which only
  one agent may use: the layout is how discovery tells agents apart),
  `subagent_files` (whether `agent-*.jsonl` files are subagent transcripts; Gemini CLI's
  `subagent_folders`: `<sessions folder>/<session id>/<agent id>.jsonl` are) and
  `leaf_rule` (NEWEST_LEAF or LAST_RECORD: where the CLI resumes), and optionally
  `file_history_folder` (where the CLI keeps its file backups, beside its
  projects folder), `run_args` (its command line for a run from the page),
  `worktree_folder` (where the CLI makes git worktrees under a repository's top
  level, e.g. `.claude/worktrees`; "" when it makes none), `usage_of` (the tokens
  an assistant record's API message used, `formats.usage`), `legacy_roots` (folders
  beside `projects` where older releases kept the same layout, e.g. Qwen Code's
  `tmp`), `compaction_of` (what a compaction boundary says about itself),
  `context_of` (what context the CLI wrote for the model in a user's name is, in words),
  `subagent_step` and `subagent_prompt` (a subagent's messages kept in progress
  records, and the prompt its call gave it: how a subagent is found in the file),
  `line_chain` (for a CLI without a uuid chain, Codex: what gives each line a synthetic
  uuid and parent by its order), `sessions_root` and `archive_root` (folders of the
  home folder whose session files lie in dated folders, their project named inside
  each file), `can_branch` (whether branch, fork, rewind and runs are offered) and
  `usage_reader` (for a CLI whose usage lines name no model or need the lines before
  them, Codex: made per session with its id, it reads the session's lines in order,
  `read(data) -> MessageUsage | None`, and names in `types` the raw types it must see
  besides the assistant records), and `home_variable` (the environment variable that
  moves the home folder, `CODEX_HOME`; the default roots are `root_folders` of `home()`),
  `prefix_fork` (for a CLI whose fork is the first lines of its source's file under a new
  first line and no title line, Codex: a `PrefixFork`; None: forks are the kept records
  restamped) and `can_rewind` (whether rewind and undo are offered; with `can_branch`).
  For a CLI whose file names hold only part of the session id (Gemini CLI):
  `head_session_id(path)` (the id its first line names, None: no session file) and
  `file_prefix` (the names of its session files, which tells its `chats/` folders from
  another agent's); `projects_root` (the home folder's root of project folders, when not
  `projects`), `project_path(project folder)` (the real path the CLI recorded for a
  project, "" when none), `results_in_reply` (a reply holds its tool results), `replaces_by_id`
  (a reply recorded again under its id replaces the earlier one), `checkpoints(folder)`.

`tests/fake_agent.py` is such a module: `tests/test_agents.py` imports, shows, forks and
rewinds its sessions with no other change.

What the module assumes and does not provide: copies are restamped by
`writing.restamp`, so a record keeps its session id under `"sessionId"` (as both
CLIs do), and the graph is the `uuid`/`parentUuid` chain `parse_line` reports.
Outside the package: the `Session.agent`/`Project.agent` choices come from
`AGENT_LABELS`, so a new agent also needs the `AlterField` migration
`makemigrations` writes for them (until then pages show its name, not its label);
CSS colours the badge by `.agent-<name>`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoints import Checkpoint
from .documents import DocumentFiles as DocumentFiles
from .documents import session_suffixes
from .forks import PrefixFork as PrefixFork
from .kinds import ParsedRecord, is_session_id
from .parts import AssistantPart as AssistantPart
from .parts import ToolOutcome as ToolOutcome
from .usage import MessageUsage, no_usage

# Where the CLI resumes a session: Claude Code takes the leaf whose conversation
# record is newest; Qwen Code takes the last record in the file.
NEWEST_LEAF = "newest_leaf"
LAST_RECORD = "last_record"
LEAF_RULES = (NEWEST_LEAF, LAST_RECORD)
PROJECT_NAME_RE = re.compile(r"[^A-Za-z0-9]")


def no_compaction(data: dict) -> str:
    """For an agent whose compaction records say nothing about themselves."""
    return ""


def no_subagent_step(data: dict, call_id: str) -> dict | None:
    """For an agent whose progress records carry no subagent's messages."""
    return None


def no_subagent_prompt(call_input: dict) -> str:
    """For an agent whose tool calls start no subagent."""
    return ""


def no_project_path(project_folder: Path) -> str:
    """For an agent whose records name their working folder."""
    return ""


def no_context(data: dict) -> tuple[str, str] | None:
    """A CLI that writes no context of its own for the model: its records are notes."""
    return None


@dataclass(frozen=True, slots=True)
class Agent:
    """What one CLI does its own way; see the module docstring for each attribute."""

    name: str
    label: str
    cli: str
    home_folder: str
    sessions_subfolder: str
    subagent_files: bool
    leaf_rule: str
    parse_line: Callable[[bytes], ParsedRecord]
    message_text: Callable[[Any], str]
    record_text: Callable[[dict], str]
    content_blocks: Callable[[dict], list[dict]]
    image_of: Callable[[dict], tuple[str, str] | None]
    assistant_parts: Callable[[dict], list[AssistantPart]]
    tool_results: Callable[[dict], list[ToolOutcome]]
    title_line: Callable[..., bytes]
    rewind_line: Callable[..., bytes] | None
    # The CLI's rewind marker naming the first message it drops, made from that prompt's
    # line (Gemini CLI's `$rewindTo`); None: the agent has none (see the module docstring).
    rewind_marker: Callable[[bytes], bytes | None] | None = None
    # Where the CLI keeps its git worktrees, relative to the repository's top level
    # ("" when it has none: forking into a worktree is then refused).
    worktree_folder: str = ""
    # The folder beside the session root where the CLI keeps backups of the files
    # it edited, one subfolder per session id ("" when it keeps none).
    file_history_folder: str = ""
    # The CLI's arguments to carry a session on from the dashboard (formats.running);
    # None when it cannot be run from there.
    run_args: Callable[..., list[str]] | None = None
    # How the CLI resumes a session by id in a terminal: `<cli> <resume_word> <id>`
    # (`claude --resume <id>`, Codex's subcommand `codex resume <id>`).
    resume_word: str = "--resume"
    # The tokens one assistant record's API message used (formats.usage); None: none.
    usage_of: Callable[[dict], MessageUsage | None] = no_usage
    # Folders beside `projects` in the home folder where older releases of the CLI kept
    # the same project layout (Qwen Code's `~/.qwen/tmp/<hash>/chats/`): default roots
    # too, where only this agent's layout is read.
    legacy_roots: tuple[str, ...] = ()
    # What a compaction boundary record says about itself, e.g. "auto · 170,251 tokens
    # before" ("" when nothing).
    compaction_of: Callable[[dict], str] = no_compaction
    # A subagent's message a progress record carries for the call that started it (None
    # when it carries none for that call), and the prompt such a call gave its subagent.
    subagent_step: Callable[[dict, str], dict | None] = no_subagent_step
    subagent_prompt: Callable[[dict], str] = no_subagent_prompt
    # For a CLI that writes no uuid chain (Codex): made once per read with the first line's
    # number, the (uuid, parent, kind) of the lines before it (asked for only when
    # needed) and the session id; its `link(record)` gives each record its synthetic
    # uuid (unique across sessions) and parent.
    line_chain: Callable[..., Any] | None = None
    # The folders of the home folder that hold session files in dated folders
    # (`sessions/YYYY/MM/DD/`, Codex) and archived ones (`archived_sessions/`); "" for a
    # CLI whose projects are folders (`sessions_subfolder`).
    sessions_root: str = ""
    archive_root: str = ""
    # Whether branch, fork, rewind and runs from the page are offered for its sessions.
    can_branch: bool = True
    # For a CLI whose usage needs the lines before it (Codex: the model is named once per
    # turn): made with the session id; the usage pass reads with it instead of `usage_of`.
    usage_reader: Callable[[str], Any] | None = None
    # The environment variable that moves the home folder (Codex's `CODEX_HOME`), or "".
    home_variable: str = ""
    # A fork written as the first lines of its source's file (Codex); None: restamped records.
    prefix_fork: PrefixFork | None = None
    # Whether rewind and its undo are offered (branch and fork may be without them).
    can_rewind: bool = True
    checkpoints: Callable[[Path], list[Checkpoint]] | None = None
    # (what it is, what it says) of context the CLI wrote for the model in a user's or
    # developer's name (Codex's `<model_switch>`...): folded under those words; None: a note.
    context_of: Callable[[dict], tuple[str, str] | None] = no_context
    # The home folder's root of project folders (Gemini CLI's `tmp`).
    projects_root: str = "projects"
    # For a CLI whose file names hold only part of the id (Gemini CLI's
    # `session-<minute>-<id[:8]>.jsonl`): the session id a file's first line names (None:
    # not a session file), and the prefix of its session files' names.
    head_session_id: Callable[[Path], str | None] | None = None
    file_prefix: str = ""
    # The real path of a project folder's project as the CLI recorded it ("" when none).
    project_path: Callable[[Path], str] = no_project_path
    # Whether a reply record holds its tool calls' results (Gemini CLI's `toolCalls`).
    results_in_reply: bool = False
    # Whether a reply recorded again under its `id` replaces the earlier record (Gemini
    # CLI): the page then shows the last version only.
    replaces_by_id: bool = False
    # Whether `<sessions folder>/<session id>/*.jsonl` are that session's subagents' chats.
    subagent_folders: bool = False
    # Older releases' one-document session files (Gemini CLI's `session-*.json`); None: none.
    documents: DocumentFiles | None = None

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 16:
            raise ValueError(f"agent name {self.name!r}: 1 to 16 characters (a database column)")
        if self.leaf_rule not in LEAF_RULES:
            raise ValueError(f"agent {self.name}: leaf_rule must be one of {LEAF_RULES}")
        appends = self.rewind_line is not None or self.rewind_marker is not None
        if appends and self.leaf_rule != LAST_RECORD:
            # An appended marker steers the resume only where the last record does.
            raise ValueError(f"agent {self.name}: a rewind by appending needs {LAST_RECORD}")
        if "/" in self.sessions_subfolder or self.sessions_subfolder in (".", ".."):
            raise ValueError(f"agent {self.name}: sessions_subfolder is one folder name")

    def project_folder_name(self, cwd: str) -> str:
        """The project folder the CLI keeps the sessions of `cwd` in: every character
        outside [A-Za-z0-9] replaced by "-" (both CLIs do this)."""
        return PROJECT_NAME_RE.sub("-", cwd)

    def home(self, environ: Mapping[str, str], user_home: Path) -> Path:
        """The CLI's home folder: where `home_variable` says, else `~/<home_folder>`."""
        moved = environ.get(self.home_variable, "") if self.home_variable else ""
        return Path(moved).expanduser() if moved else user_home / self.home_folder

    @property
    def root_folders(self) -> tuple[str, ...]:
        """The folders of the home folder that are session roots by default."""
        if self.sessions_root:
            return tuple(f for f in (self.sessions_root, self.archive_root) if f)
        return (self.projects_root, *self.legacy_roots)

    @property
    def rewinds_by_appending(self) -> bool:
        """Whether a rewind appends the CLI's own marker instead of rewriting the file."""
        return self.rewind_line is not None or self.rewind_marker is not None

    def sessions_folder(self, project_folder: Path) -> Path:
        """The folder of a project that holds its session files."""
        sub = self.sessions_subfolder
        return project_folder / sub if sub else project_folder

    def session_file(self, project_folder: Path, session_id: str) -> Path:
        """Where session `session_id` of the project at `project_folder` is kept."""
        return self.sessions_folder(project_folder) / f"{session_id}.jsonl"

    def project_folder_of(self, path: Path) -> Path | None:
        """The project folder of a session file at `path`; None when the layout does not fit."""
        folder = path.parent
        if self.sessions_subfolder:
            if folder.name != self.sessions_subfolder:
                return None
            folder = folder.parent
        return folder

    def session_id_of(self, path: Path) -> str | None:
        """The session id a file's name holds: `<id>.jsonl`, or for a dated layout
        `rollout-<time>-<id>.jsonl`, or where the name holds part of it (Gemini CLI) the
        one the file's first line names (or its one document's head); None when there is none."""
        if path.suffix not in session_suffixes(self.documents):
            return None
        stem = path.stem
        if self.head_session_id is not None:
            return self.head_session_id(path)
        if self.sessions_root:
            stem = stem[-36:] if stem.startswith("rollout-") else ""
        return stem.lower() if is_session_id(stem) else None

    def is_session_path(self, path: Path) -> bool:
        """Whether `path`, relative to a session root, is `<project>/[<sub>/]<id>.jsonl`."""
        if self.file_prefix:
            folder = self.project_folder_of(path)
            named = path.name.startswith(self.file_prefix) and path.suffix in session_suffixes(
                self.documents
            )
            return named and folder is not None and len(folder.parts) == 1
        if path.suffix != ".jsonl" or not is_session_id(path.stem):
            return False
        folder = self.project_folder_of(path)
        return folder is not None and len(folder.parts) == 1
