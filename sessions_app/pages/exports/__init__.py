"""Sessions as Markdown and as one self-contained HTML page, streamed turn by turn.

Transcripts are untrusted, and most Markdown viewers render raw HTML. So the
Markdown export keeps Markdown but never raw HTML: every `<` that would open a tag
is written as `&lt;` (code is left alone, where it is inert anyway), tool output
is fenced, and text that still parses as HTML after that is fenced whole. Nor a
remote image: a viewer would fetch it from its host when the file is opened (the
pages refuse them), so `![x](https://…)` is written as the link `[x](https://…)`;
an image in a `data:` URL loads nothing and stays. Each
piece is checked alone, so each must also end outside any code fence: a fence left
open would swallow what follows up to a fence line of a later piece, and that
piece's code would be read as prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils.html import escape
from markdown_it import MarkdownIt

from ... import selectors
from ...models import Session
from ...rendering import MARKDOWN_LIMIT, chips_text, split_reminders, strip_ansi
from ...services.archive.health import archive_damage
from ...transcript import ToolCall, Turn, build_turns
from .items import diff_text, image_note, todo_text, with_subagents

# Records read, built and rendered at a time: an export's memory is one window's.
CHUNK_RECORDS = 1_000
CONTEXT_CHARS = 2000  # of context the CLI wrote for the model, in an export
# Raw HTML on, as in most Markdown viewers: what this finds, they would render.
_VIEWER = MarkdownIt("commonmark")
# A code span: a run of backticks, then text (no blank line), then a run as long.
NEWLINE_RE = re.compile(r"\r\n?")
CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)
# An image's `![`, unless what follows is an image in a `data:` URL (it loads nothing).
IMAGE_OPEN_RE = re.compile(r"!\[(?![^\]\n]*\]\(\s*<?data:)")


def _turn_pages(session: Session) -> Iterator[list[Turn]]:
    """The active branch's turns, at most CHUNK_RECORDS records read at a time.

    A window ends before the turn it would cut, so turns stay whole; a turn longer than
    a window alone goes on in the next (a card marked continued). Memory stays that of
    one window, whatever the session's length or its longest turn's.
    """
    from_line = 0
    while True:
        records = selectors.active_records(session, from_line=from_line, limit=CHUNK_RECORDS)
        if not records:
            return
        full = len(records) == CHUNK_RECORDS
        if full:
            cut = len(records)
            while cut and records[cut - 1].turn == records[-1].turn:
                cut -= 1
            records = records[:cut] or records  # the last turn whole in the next window
        yield with_subagents(session, build_turns(records, session.agent))
        if not full:
            return
        from_line = records[-1].line + 1


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return ticks


def _fenced(text: str, language: str = "") -> str:
    fence = _fence(text)
    return f"{fence}{language}\n{text}\n{fence}"


def _code(text: str) -> str:
    """`text` as one inline code span, whatever backticks it holds."""
    text = " ".join(text.split())
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}" if text else ""


def _has_html(tokens: list) -> bool:
    for token in tokens:
        if token.type == "html_block":
            return True
        if token.children and any(child.type == "html_inline" for child in token.children):
            return True
    return False


def _has_remote_image(tokens: list) -> bool:
    for token in tokens:
        for child in token.children or ():
            if child.type == "image" and not str(child.attrGet("src") or "").startswith("data:"):
                return True
    return False


def _prose_changed(text: str) -> str:
    """Prose made inert: no tag opens, and an image (not a `data:` one) is a link."""
    return IMAGE_OPEN_RE.sub("[", text.replace("<", "&lt;"))


def _escape_outside_code_spans(text: str) -> str:
    parts, last = [], 0
    for span in CODE_SPAN_RE.finditer(text):
        parts += [_prose_changed(text[last : span.start()]), span.group(0)]
        last = span.end()
    parts.append(_prose_changed(text[last:]))
    return "".join(parts)


def _escaped(text: str, tokens: list) -> str:
    """`text` with `<` escaped and remote images made links, but in code blocks and spans."""
    code_lines: set[int] = set()
    for token in tokens:
        if token.type in ("fence", "code_block") and token.map:
            code_lines.update(range(*token.map))
    out: list[str] = []
    prose: list[str] = []
    for number, line in enumerate(text.split("\n")):
        if number in code_lines:
            if prose:
                out.append(_escape_outside_code_spans("\n".join(prose)))
                prose = []
            out.append(line)
        else:
            prose.append(line)
    if prose:
        out.append(_escape_outside_code_spans("\n".join(prose)))
    return "\n".join(out)


def _closing_fence(text: str, tokens: list) -> str:
    """The line that closes a fence `text` leaves open at its end, if it does."""
    top = [token for token in tokens if token.level == 0 and token.map]
    if not top or top[-1].type != "fence":
        return ""
    fence, lines = top[-1], text.split("\n")
    start, end = fence.map
    last = lines[end - 1].strip() if end - 1 < len(lines) else ""
    marker = fence.markup
    if end - start > 1 and last and set(last) == {marker[0]} and len(last) >= len(marker):
        return ""
    return ("" if text.endswith("\n") else "\n") + marker


def _inert(text: str) -> str:
    """Markdown `text` with no raw HTML a viewer would render, no image it would fetch;
    code blocks and spans kept."""
    if "<" not in text and "```" not in text and "~~~" not in text and "![" not in text:
        return text
    # Lines as markdown-it counts them (its token maps are line numbers).
    text = NEWLINE_RE.sub("\n", text)
    if len(text) > MARKDOWN_LIMIT:  # too big to parse in bounded time: show it verbatim
        return _fenced(text)
    tokens = _VIEWER.parse(text)
    if _has_html(tokens) or _has_remote_image(tokens):
        escaped = _escaped(text, tokens)
        tokens = _VIEWER.parse(escaped)
        # The code-span scan is simpler than CommonMark's: what it missed is fenced whole.
        if _has_html(tokens) or _has_remote_image(tokens):
            return _fenced(text)
        text = escaped
    return text + _closing_fence(text, tokens)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in _inert(text).splitlines())


def markdown_chunks(session: Session) -> Iterator[str]:
    """The active branch as Markdown: prompts, answers, tool calls with their output."""
    title = " ".join((session.title or str(session.session_id)).split())
    yield f"# {_prose_changed(title)}\n\n"
    yield f"- session: `{session.session_id}` ({session.get_agent_display()})\n"
    if session.cwd:
        yield f"- cwd: {_code(session.cwd)}\n"
    yield f"- turns: {session.turn_count}\n\n"
    if damage := archive_damage(session):
        yield f"> **Warning:** {damage.message}\n\n"
    for turns in _turn_pages(session):
        for turn in turns:
            if turn.number is not None:
                yield from _turn_markdown(turn, f"## Turn {turn.number}", window=True)


def _turn_markdown(turn: Turn, heading: str, *, window: bool = False) -> Iterator[str]:
    """One turn: the prompt, then each item; a subagent's turns nested as a quote."""
    if window and turn.continued and not turn.prompt:  # a turn longer than a window goes on
        yield f"{heading} (continued)\n\n"
    else:
        yield f"{heading}\n\n**User:**\n\n{_inert(chips_text(turn.prompt))}\n\n"
    for image in turn.images:
        yield f"{image_note(image)}\n\n"
    for item in turn.items:
        if item.kind == "text":
            yield f"**Assistant:**\n\n{_inert(item.text)}\n\n"
        elif item.kind == "tool" and item.tool:
            yield from _call_markdown(item.tool)
        elif item.kind == "context":
            # Folded on the page: its words, and the start of what it says.
            said = item.text.strip()
            said = said if len(said) <= CONTEXT_CHARS else said[:CONTEXT_CHARS] + "…"
            if said:
                yield f"{_quote(f'{item.label}:')}\n>\n{_quote(said)}\n\n"
            else:
                yield f"{_quote(item.label)}\n\n"
            for image in item.images:
                yield f"{image_note(image)}\n\n"
        elif item.kind == "note":
            yield f"{_quote(chips_text(item.text).strip()[:2000])}\n\n"
        elif item.kind == "boundary":
            said = f" ({item.text})" if item.text else ""
            yield f"{_quote('Conversation compacted' + said)}\n\n"
        elif item.kind in ("summary", "expansion"):
            yield f"{_quote(item.text.strip()[:2000])}\n\n"


def _call_markdown(call: ToolCall) -> Iterator[str]:
    ended = f" (exit {call.exit})" if call.exit and call.exit.isdigit() else ""
    ended = ended or (f" ({call.exit})" if call.exit else "")
    yield f"**Tool {_code(call.name) or '(unnamed)'}** {_code(call.summary)}{ended}\n\n"
    if call.todos:
        yield f"{_inert(todo_text(call))}\n\n"
    elif call.edit:
        path, old, new = call.edit
        yield f"{_fenced(diff_text(path, old, new), 'diff')}\n\n"
    elif call.patch:
        yield f"{_fenced(call.patch, 'diff')}\n\n"
    elif call.code is not None:
        yield f"{_fenced(call.code, call.code_language)}\n\n"
    if call.result:
        body, reminders = split_reminders(call.result)
        yield f"{_fenced(strip_ansi(body))}\n\n"  # as the transcript shows it
        if reminders:
            yield f"{_inert(chips_text(reminders))}\n\n"
    for image in call.images:
        yield f"{image_note(image)}\n\n"
    for sub in call.subagent or []:
        if sub.number is not None:
            nested = "".join(_turn_markdown(sub, "**Subagent:**"))
            yield "\n".join(f"> {line}" if line else ">" for line in nested.splitlines())
            yield "\n\n"


class ExportAssetMissing(RuntimeError):
    """A stylesheet the HTML export inlines is not where the static files are found."""


STYLESHEETS = ("sessions_app/app.css", "sessions_app/highlight.css")


def export_styles() -> str:
    """The pages' stylesheets, as the HTML export inlines them; a missing one raises.

    Found as the pages find them (the static files' finders), never by a path next to
    this module: an export without its styles is an error, not a plain page.
    """
    css = []
    for name in STYLESHEETS:
        path = finders.find(name)
        if not isinstance(path, str):
            raise ExportAssetMissing(f"the HTML export's stylesheet {name} is not found")
        css.append(Path(path).read_text(encoding="utf-8"))
    return "".join(css)


def html_chunks(session: Session) -> Iterator[str]:
    """The transcript as one HTML file with its styles inline, for sharing or archiving.

    The styles are read before the first chunk is made (so before any byte is sent): a
    missing stylesheet fails the request whole, never a download cut short.
    """
    return _html_chunks(session, export_styles())


def _html_chunks(session: Session, css: str) -> Iterator[str]:
    yield (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(session.title)}</title><style>{css}</style></head><body><main>"
        f"<h1>{escape(session.title)}</h1>"
    )
    if damage := archive_damage(session):
        yield f"<p class='action-error archive-damage' role='alert'>{escape(damage.message)}</p>"
    for turns in _turn_pages(session):
        yield render_to_string(
            "sessions_app/transcript.html#turn-list",
            {"session": session, "turns": turns, "static_export": True},
        )
    yield "</main></body></html>"
