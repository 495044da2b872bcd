"""The CLIs' own markup inside user text, read as what a person saw: chips, not tags.

Claude Code wraps what is not typed prose in tags: a slash command
(`<command-name>/review</command-name>`, `<command-args>`, `<command-message>`), a local
command's output (`<local-command-stdout>`), a finished background task
(`<task-notification>` with `<summary>`, `<status>`), a reminder it adds
(`<system-reminder>`), what an IDE sent (`<ide_opened_file>`, `<ide_selection>`), the
`!` shell mode (`<bash-input>`, `<bash-stdout>`). Claude Code 1.0.x also wrote what a
slash command expanded to into the same record, as JSON of a text block
(`<command-contents>{"type": "text", "text": "Please analyze..."}</command-contents>`):
it is the command's expansion, not words anyone typed. Only a block that starts a line and
whose closing tag ends one is the CLI's: the same words inside prose or a code span
are the user's and stay text. Pure Python.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from .kinds import collapse

BLOCK_TAGS = (
    "command-message",
    "command-name",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "task-notification",
    "system-reminder",
    "ide_opened_file",
    "ide_selection",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "user-memory-input",
)
BLOCK_RE = re.compile(
    r"^[ \t]*<(" + "|".join(BLOCK_TAGS) + r")>(.*?)</\1>[ \t]*(?:\r?\n|\Z)", re.S | re.M
)
TAG_RE = re.compile(r"</?(?:" + "|".join(BLOCK_TAGS) + r")>")
# A tag a snippet's window cut in two, at its start ("command-name>") or its end ("</comm").
EDGE_TAG_RE = re.compile(
    r"^/?(?:" + "|".join(BLOCK_TAGS) + r")>|</?(?:" + "|".join(BLOCK_TAGS) + r")?[a-z_-]*\Z"
)
# An expansion cut short (a page cuts a long prompt) has no closing tag: it runs to the end.
CONTENTS_RE = re.compile(r"<command-contents>(.*?)(?:</command-contents>|\Z)", re.S)
JSON_TEXT_RE = re.compile(r'^\s*\{\s*"type"\s*:\s*"text"\s*,\s*"text"\s*:\s*"', re.S)
STRING_BODY_RE = re.compile(r'(?:[^"\\]|\\.)*', re.S)
CUT_ESCAPE_RE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")  # an escape the cut left half
INNER_RE = re.compile(r"<([a-z-]+)>(.*?)</\1>", re.S)
OPENED_RE = re.compile(r"opened the file (.+?) in the IDE", re.S)
SELECTED_RE = re.compile(r"selected the lines? (\d+)(?: to (\d+))? from (.+?):\s*\n(.*)", re.S)
IDE_TAIL = "This may or may not be related to the current task."
# Chips a title leaves out: the CLI's reminders to the model, not what was asked.
NOT_IN_TITLES = frozenset({"reminder", "caveat"})


@dataclass(frozen=True, slots=True)
class Chip:
    """One block of markup as a labelled chip; `detail` is what it held, shown on request."""

    kind: str  # command, output, caveat, task, reminder, opened, selection, shell, memory
    label: str
    detail: str = ""
    title: str = ""  # a longer description, e.g. the whole path
    expansion: str = ""  # what a slash command expanded to (Claude Code 1.0.x), as sent


@dataclass(frozen=True, slots=True)
class Marked:
    """User text split into its pieces, in order: plain text (str) and chips."""

    pieces: tuple[str | Chip, ...]

    @property
    def chips(self) -> list[Chip]:
        return [p for p in self.pieces if isinstance(p, Chip)]

    @property
    def text(self) -> str:
        """The prose alone."""
        return "\n".join(p for p in self.pieces if isinstance(p, str)).strip()

    @property
    def command(self) -> Chip | None:
        return next((c for c in self.chips if c.kind == "command"), None)


def has_markup(text: str) -> bool:
    """Whether `text` may hold a block of the CLIs' markup (a cheap test before `read`)."""
    return "</" in text and BLOCK_RE.search(text) is not None


def read_markup(text: str) -> Marked:
    """`text` as plain pieces and chips; text without the CLIs' blocks is one piece."""
    if "</" not in text and "<command-contents>" not in text:
        return Marked((text,))
    text, expansion = _without_contents(text)
    pieces: list[str | Chip] = []
    command: dict[str, str] = {}
    at = 0
    for match in BLOCK_RE.finditer(text):
        if match.start() > at and text[at : match.start()].strip():
            pieces.append(text[at : match.start()].strip("\n"))
        at = match.end()
        tag, body = match.group(1), match.group(2)
        if tag.startswith("command-"):
            first = not command
            command[tag] = body.strip()
            if first:
                pieces.append(Chip("command", ""))  # its place; filled in below
            continue
        pieces.append(_chip(tag, body))
    if text[at:].strip():
        pieces.append(text[at:].strip("\n"))
    if command:
        name = command.get("command-name", "")
        if name and not name.startswith("/"):
            name = "/" + name  # Claude Code 1.0.x wrote the name without its slash
        if not name and command.get("command-message", "").split():
            name = "/" + command["command-message"].split()[0]
        label = " ".join(p for p in (name, command.get("command-args", "")) if p)
        chip = Chip(
            "command",
            collapse(label, 300),
            title=command.get("command-message", ""),
            expansion=expansion,
        )
        pieces = [chip if isinstance(p, Chip) and p.kind == "command" else p for p in pieces]
    return Marked(tuple(pieces))


def _without_contents(text: str) -> tuple[str, str]:
    """`text` without the `<command-contents>` block of a command's tags, and the expansion
    that block held (decoded); a block cut short runs to the end of `text`."""
    found = CONTENTS_RE.search(text)
    if found is None or "<command-name>" not in text:
        return text, ""
    rest = text[: found.start()].rstrip(" \t") + text[found.end() :]
    return rest, expansion_text(found.group(1))


def expansion_text(body: str) -> str:
    """What a `<command-contents>` block held: the `text` of its JSON text block, else itself.

    Tolerates a block cut short (no closing quote or brace): its text is decoded as far as
    it goes.
    """
    body = body.strip()
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("text"), str):
        return data["text"].strip()
    start = JSON_TEXT_RE.match(body)
    if start is None:
        return body
    return _unescaped(body[start.end() :]).removesuffix('"\n}').removesuffix('"}').strip()


def _unescaped(text: str) -> str:
    """A JSON string's body, escapes decoded, up to its closing quote or its end."""
    found = STRING_BODY_RE.match(text)  # always matches: the pattern accepts ""
    body = found.group(0) if found else ""
    body = CUT_ESCAPE_RE.sub("", body)
    try:
        return json.loads(f'"{body}"')
    except ValueError:
        return body


def _chip(tag: str, body: str) -> Chip:
    body = body.strip("\n")
    if tag in ("local-command-stdout", "local-command-stderr"):
        label = "command output" if tag.endswith("stdout") else "command error output"
        return Chip("output", label, body)
    if tag == "local-command-caveat":
        return Chip("caveat", "note from the CLI", body)
    if tag == "system-reminder":
        return Chip("reminder", "system reminder", body.strip())
    if tag == "task-notification":
        inner = {m.group(1): m.group(2).strip() for m in INNER_RE.finditer(body)}
        summary = inner.get("summary") or f"background task {inner.get('status', 'finished')}"
        facts = "\n".join(f"{key.replace('-', ' ')}: {value}" for key, value in inner.items())
        return Chip("task", collapse(summary, 200), facts, title=inner.get("output-file", ""))
    if tag == "ide_opened_file":
        found = OPENED_RE.search(body)
        path = found.group(1).strip() if found else ""
        name = PurePosixPath(path).name if path else "a file"
        return Chip("opened", f"opened file: {name}", "", title=path or body.strip())
    if tag == "ide_selection":
        found = SELECTED_RE.search(body)
        if found is None:
            return Chip("selection", "selection in the IDE", body.strip())
        first, last, path, code = found.groups()
        code = code.strip()
        if code.endswith(IDE_TAIL):
            code = code[: -len(IDE_TAIL)].rstrip()
        lines = f"{first}\u2013{last}" if last and last != first else first
        name = PurePosixPath(path.strip()).name
        return Chip("selection", f"selected lines {lines} of {name}", code, title=path.strip())
    if tag == "bash-input":
        return Chip("shell", collapse(f"$ {body.strip()}", 300))
    if tag in ("bash-stdout", "bash-stderr"):
        return Chip("output", "shell output" if tag.endswith("stdout") else "shell errors", body)
    return Chip("memory", collapse(f"memory: {body.strip()}", 300))


def plain(text: str) -> str:
    """User text as one line for a title or list: what was typed, a command by its name.

    Chips that only give context (an opened file, a selection, a reminder) count only
    when there is nothing else.
    """
    if not has_markup(text):
        return text
    marked = read_markup(text)
    command = marked.command
    prose = " ".join(p for p in marked.pieces if isinstance(p, str))
    if command is not None:
        return f"{command.label} {prose}".strip()
    if prose.strip():
        return prose
    labels = [c.label for c in marked.chips if c.kind not in NOT_IN_TITLES]
    return " ".join(labels or [c.label for c in marked.chips])


def tags_removed(text: str) -> str:
    """`text` with the CLI's markup tags made spaces, their contents kept: for a piece of
    text that may cut a block in two (a search snippet). A slash command's expansion
    (`<command-contents>` JSON) reads as its decoded text."""
    if "<" not in text and ">" not in text:
        return text
    if "<command-contents>" in text:
        text = CONTENTS_RE.sub(lambda m: f" {expansion_text(m.group(1))} ", text)
    return EDGE_TAG_RE.sub(" ", TAG_RE.sub(" ", text))


def shown_text(text: str) -> str:
    """User text as the page shows it, in words: prose, each chip's label and what it
    holds, a slash command's expansion decoded. For search: what the page shows, it finds."""
    if "</" not in text and "<command-contents>" not in text:
        return text
    out: list[str] = []
    for piece in read_markup(text).pieces:
        if isinstance(piece, str):
            out.append(piece)
        else:
            out.extend(p for p in (piece.label, piece.detail, piece.expansion) if p)
    return "\n".join(out)


# Codex's IDE extensions (VS Code, Desktop) put the editor's state before what was typed.
IDE_CONTEXT = "# Context from my IDE setup:"
IDE_REQUEST = "## My request for Codex:"


def title_text(first_prompt: str | None, limit: int = 100) -> str:
    """The title a first prompt gives a session: without markup, whitespace collapsed; of a
    prompt sent from Codex's IDE extension, what was typed under "My request for Codex"."""
    if first_prompt and first_prompt.lstrip().startswith(IDE_CONTEXT):
        request = first_prompt.partition(IDE_REQUEST)[2]
        first_prompt = request if request.strip() else first_prompt
    return collapse(plain(first_prompt), limit) if first_prompt else ""
