"""Pages. Thin: an access helper, a selector, then render."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_safe
from django_htmx.middleware import HtmxDetails

from .. import selectors
from ..formats.long_lines import cut_note
from ..models import Session
from ..pricing import bundled_source
from ..rendering.lineage import lineage_svg
from ..selectors.family import AGENT_ID_RE
from ..selectors.subagents import call_subagent as call_subagent_records
from ..selectors.tree import family_tree
from ..selectors.usage.sessions import family_usage
from ..services.archive import ArchiveCorrupt, archive_check, from_archive, session_open
from ..services.archive.versions import earlier_version_bytes
from ..services.roots import UnsafePath
from ..transcript import PAGE_LIMITS, build_page, build_turns, full_item, item_part
from . import exports as exporting
from .family_tree import tree_html
from .heavy import heavy

# Record ids are UUIDs in both CLIs; a damaged or hand-made file may hold others.
LEAF_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


class HtmxHttpRequest(HttpRequest):
    """A request after django-htmx's middleware: `request.htmx` is truthy when htmx sent it."""

    htmx: HtmxDetails


def session_or_404(session_id: uuid.UUID) -> Session:
    """The listed session with this id, for a page; 404 when there is none."""
    session = selectors.listed_session(session_id)
    if session is None:
        raise Http404("no such session")
    return session


def bounded_int(value: str | None, default: int, *, low: int = 0, high: int = 10**9) -> int:
    try:
        return min(max(int(value or default), low), high)
    except ValueError:
        return default


@require_safe
def record_output(
    request: HtmxHttpRequest, session_id: uuid.UUID, line: int, index: int | None = None
) -> HttpResponse:
    """One item of a record whole ("show all" of a cut one), or every item of the record."""
    session = session_or_404(session_id)
    record = selectors.record_at(session, line)
    if record is None:
        raise Http404("no such record")
    if index is None:
        turns = build_turns([record], session.agent, show_all=True)
        items = [item for turn in turns for item in turn.items]
    elif (item := full_item(record, session.agent, index, raw="raw" in request.GET)) is None:
        raise Http404("no such item")
    else:
        items = [item]
    # In parts: each long text PART_CHARS at a time, a link to the next part after it.
    part = bounded_int(request.GET.get("part"), 0)
    parts = max([item_part(item, part) for item in items] or [1])
    if part >= parts:
        raise Http404("no such part")
    template = "sessions_app/record_output.html"
    if request.htmx:
        template += "#record-output"
    context = {
        "session": session,
        "items": items,
        "line": line,
        "turn": record.turn,
        "crumb_here": f"line {line + 1}",
        "part": part,
        "parts": parts,
        "next_part": part + 1 if part + 1 < parts else None,
        "raw": "raw" in request.GET,
        "here": request.path,
        "cut": cut_note(record.cut_at, record.length) if record.cut_at is not None else "",
    }
    return render(request, template, context)


@require_safe
def subagent(request: HttpRequest, session_id: uuid.UUID, agent_id: str) -> HttpResponse:
    """A subagent's transcript from its own file, loaded into its call when opened."""
    session = session_or_404(session_id)
    if not AGENT_ID_RE.match(agent_id):
        raise Http404("no such subagent")
    sub = selectors.subagents_of(session).get(agent_id)
    if sub is None:
        raise Http404("no such subagent")
    return _subagent(request, session, selectors.subagent_records(sub), sub.agent_name)


@require_safe
def call_subagent(
    request: HttpRequest, session_id: uuid.UUID, line: int, index: int
) -> HttpResponse:
    """The subagent a tool call started, from whichever layout kept it."""
    session = session_or_404(session_id)
    if not session.records.filter(line=line).exists():
        raise Http404("no such record")
    return _subagent(request, session, call_subagent_records(session, line, index), "")


def _subagent(
    request: HttpRequest, session: Session, records: list | None, name: str
) -> HttpResponse:
    """Into its call (htmx): one bounded page, texts cut; alone: the whole transcript."""
    context = {"session": session, "subagents": {}, "no_subagent": not records, "name": name}
    if getattr(request, "htmx", False):
        page = build_page(records or [], session.agent, limits=PAGE_LIMITS)
        context.update(turns=page.turns, more=page.next_line is not None, whole_url=request.path)
        return render(request, "sessions_app/transcript.html#subagent-turns", context)
    context["turns"] = build_turns(records or [], session.agent)
    return render(request, "sessions_app/subagent.html", context)


@require_safe
def lineage(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The family tree of a session, drawn as SVG (bounded, whatever the files say)."""
    session = session_or_404(session_id)
    root, sessions = selectors.lineage_of(session)
    svg = lineage_svg(root, sessions, current=session)
    family = family_usage(sessions)
    # The compare form starts on a real pair: the session and its parent, or its first
    # other relative.
    others = [m.session.pk for m in family.members if m.session.pk != session.pk]
    pair = (
        (session.parent_id, session.pk)
        if session.parent_id
        else (session.pk, next(iter(others), session.pk))
    )
    context = {
        "session": session,
        "compare_pair": pair,
        "svg": svg,
        "family": family,
        "tree": (tree := family_tree(session, family)),
        "tree_html": tree_html(tree, session),
        "price_source": bundled_source(),
    }
    return render(request, "sessions_app/lineage.html", context)


@require_safe
@heavy
def export(request: HttpRequest, session_id: uuid.UUID, fmt: str) -> HttpResponseBase:
    """Download a session: its file byte for byte (JSONL, or a JSON document), Markdown,
    or one HTML page."""
    session = session_or_404(session_id)
    name = f"{session.session_id}"
    if fmt == "jsonl":
        try:
            f = session_open(session)
            if from_archive(f):
                archive_check(session)  # every archived piece whole, before the first byte goes
        except (OSError, UnsafePath):
            # A link or a FIFO planted in a root, or a corrupted archive, is never served.
            raise Http404("the session file is gone") from None
        # The file under its own suffix: an older Gemini CLI's one-document `.json` too.
        suffix = "json" if session.path.endswith(".json") else "jsonl"
        return FileResponse(f, as_attachment=True, filename=f"{name}.{suffix}")
    response: StreamingHttpResponse
    if fmt == "md":
        response = StreamingHttpResponse(
            exporting.markdown_chunks(session), content_type="text/markdown; charset=utf-8"
        )
    elif fmt == "html":
        response = StreamingHttpResponse(
            exporting.html_chunks(session), content_type="text/html; charset=utf-8"
        )
    else:
        raise Http404("unknown export format")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@require_safe
def earlier_version(request: HttpRequest, session_id: uuid.UUID, name: str) -> HttpResponse:
    """Download an earlier version of the session file, as its CLI wrote it before it
    rewrote the file in place (kept by the archive, `archive.versions`)."""
    session = session_or_404(session_id)
    try:
        raw = earlier_version_bytes(session, name)
    except ArchiveCorrupt:
        raise Http404("that version is corrupted in the archive; not served") from None
    if raw is None:
        raise Http404("no such earlier version of this session file")
    path = Path(session.path)
    response = HttpResponse(raw, content_type="application/octet-stream")
    filename = f"{path.stem}.{name[:12]}{path.suffix}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
