"""A loopback fake model server for driving the real claude and qwen CLIs.

It speaks just enough of two wire protocols:

* Anthropic Messages (`POST /v1/messages`, streaming SSE or plain JSON, and
  `POST /v1/messages/count_tokens`) for Claude Code;
* OpenAI chat completions (`POST /v1/chat/completions` or `/chat/completions`,
  streaming or not, and `GET /v1/models`) for Qwen Code;
* the OpenAI Responses API (`POST /v1/responses`, streamed) for Codex, whose
  WebSocket upgrade on that path is answered 426 (see `fake_responses.py`).

Every request is recorded (method, path, parsed JSON body, headers) in a
thread-safe list. Any other path is answered 200 with an empty JSON object and
logged in `FakeModel.unknown_paths`.

Scripted replies, decided from the last message of the conversation:

* last user text contains `RUN: <command>` -> a tool call to the shell tool
  (`Bash` for Claude, the tool whose name is `run_shell_command` for Qwen);
* last user text contains `WRITE: <absolute path> :: <content>` -> a call to
  Claude's `Write` tool (Claude only: it keeps file-history backups);
* last message is a tool result -> text `done: <first 40 chars of the result>`;
* otherwise -> text `reply to: <the prompt text>`.

Main conversation vs side requests (`Recorded.is_main`): a main request offers
tools, and its system prompt is not that of a helper agent listed in
`SIDE_AGENT_MARKERS`. Tool-less side requests (title / topic generation, quota
probes, next-speaker checks) are thus excluded, and so is Qwen Code 0.24's
managed-memory extractor, which runs after each turn *with* six tools. See
README_compat.md for what each CLI was seen to send.

Stray egress: clis.py points the CLIs' HTTP(S) proxy at this server; a CONNECT
or absolute-URL request is refused with 403 and logged in `egress_attempts`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.compat import fake_responses

# Claude Code injects context into user turns as text blocks wrapped in these tags.
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_RUN_RE = re.compile(r"RUN:\s*(.+)")
_WRITE_RE = re.compile(r"WRITE:\s*(\S+)\s*::\s*(.*)", re.DOTALL)

# Phrases in the system prompt of helper agents that get tools but are not the
# conversation (Qwen Code 0.24 runs a memory extractor after each turn).
SIDE_AGENT_MARKERS = ("managed memory extraction subagent",)

CLAUDE_SHELL_TOOL = "Bash"
CLAUDE_WRITE_TOOL = "Write"
QWEN_SHELL_TOOL = "run_shell_command"


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def api(self) -> str:
        """`anthropic`, `openai`, `responses` or `other`."""
        if self.path.split("?")[0].rstrip("/").endswith("/messages"):
            return "anthropic"
        if self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            return "openai"
        if self.method == "POST" and self.path.split("?")[0].rstrip("/").endswith("/responses"):
            return "responses"
        return "other"

    @property
    def conversation(self) -> list[tuple[str, str]]:
        """The normalised conversation this request carries (see `conversation`)."""
        if not isinstance(self.body, dict) or self.api == "other":
            return []
        if self.api == "responses":
            return fake_responses.conversation(self.body)
        return conversation(self.body, self.api)

    @property
    def prompts(self) -> list[str]:
        """Codex: the typed prompts this Responses request carries (injected context dropped)."""
        if self.api != "responses" or not isinstance(self.body, dict):
            return []
        return fake_responses.prompts(self.body)

    @property
    def system_text(self) -> str:
        """The system prompt: Anthropic's `system`, or OpenAI's first system message."""
        if not isinstance(self.body, dict):
            return ""
        if self.api == "anthropic":
            return _block_text(self.body.get("system") or "")
        if self.api == "responses":
            return str(self.body.get("instructions") or "")
        for message in self.body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "system":
                return _block_text(message.get("content") or "")
        return ""

    @property
    def is_main(self) -> bool:
        """A main-conversation model call.

        It offers tools (side requests such as title or topic generation and
        quota probes carry none) and is not one of the tool-using helper agents
        the CLIs run beside the conversation (Qwen's memory extractor).
        """
        if self.api not in ("anthropic", "openai", "responses") or not isinstance(self.body, dict):
            return False
        if not self.body.get("tools"):
            return False
        head = self.system_text[:2000].lower()
        return not any(marker in head for marker in SIDE_AGENT_MARKERS)


# ---------------------------------------------------------------- text helpers


def _strip_reminders(text: str) -> str:
    return _REMINDER_RE.sub("", text).strip()


def _block_text(block: Any) -> str:
    """The plain text of an OpenAI/Anthropic content value (string or parts)."""
    if isinstance(block, str):
        return block
    if isinstance(block, list):
        return "\n".join(t for t in (_block_text(b) for b in block) if t)
    if isinstance(block, dict):
        if block.get("type") in (None, "text", "input_text"):
            return str(block.get("text", ""))
        if block.get("type") == "tool_result":
            return _block_text(block.get("content", ""))
    return ""


def _anthropic_entries(message: dict[str, Any]) -> list[tuple[str, str]]:
    """Normalise one Anthropic message into (role, text) entries.

    Text blocks (minus `<system-reminder>` sections) are joined into one entry;
    each `tool_use` becomes `("tool_use", "<name> <json input>")` and each
    `tool_result` becomes `("tool_result", "<text>")`.
    """
    role = str(message.get("role", ""))
    if role in ("system", "developer"):
        return []
    content = message.get("content", "")
    if isinstance(content, str):
        text = _strip_reminders(content)
        return [(role, text)] if text else []
    texts: list[str] = []
    tools: list[tuple[str, str]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = _strip_reminders(str(block.get("text", "")))
            if text:
                texts.append(text)
        elif kind == "tool_use":
            payload = json.dumps(block.get("input", {}), sort_keys=True)
            tools.append(("tool_use", f"{block.get('name')} {payload}"))
        elif kind == "tool_result":
            tools.append(("tool_result", _block_text(block.get("content", "")).strip()))
    out: list[tuple[str, str]] = []
    if role == "user":
        out.extend(tools)
        if texts:
            out.append((role, "\n".join(texts)))
    else:
        if texts:
            out.append((role, "\n".join(texts)))
        out.extend(tools)
    return out


def _openai_entries(message: dict[str, Any]) -> list[tuple[str, str]]:
    """Normalise one OpenAI chat message the same way as `_anthropic_entries`."""
    role = str(message.get("role", ""))
    if role in ("system", "developer"):
        return []
    if role == "tool":
        return [("tool_result", _block_text(message.get("content", "")).strip())]
    out: list[tuple[str, str]] = []
    text = _strip_reminders(_block_text(message.get("content") or ""))
    if text:
        out.append((role, text))
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except json.JSONDecodeError:
            args = fn.get("arguments")
        out.append(("tool_use", f"{fn.get('name')} {json.dumps(args, sort_keys=True)}"))
    return out


def conversation(body: dict[str, Any], api: str) -> list[tuple[str, str]]:
    """The conversation a request body carries, as (role, text) pairs.

    `api` is `anthropic` or `openai`. Roles are `user`, `assistant`, `tool_use`
    and `tool_result`; system prompts and Claude's `<system-reminder>` context
    are dropped, and so are messages that are left empty by that.
    """
    normalise = _openai_entries if api == "openai" else _anthropic_entries
    entries: list[tuple[str, str]] = []
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            entries.extend(normalise(message))
    return entries


def _last_turn(body: dict[str, Any], api: str) -> tuple[str, str]:
    """("tool_result", text) or ("user", text) for the last message."""
    # Claude Code 2.1 also sends mid-conversation `role: system` messages (after
    # the user turn); skip those to find the turn the model must answer.
    messages = [
        m
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") not in ("system", "developer")
    ]
    if not messages:
        return ("user", "")
    last = messages[-1]
    if api == "openai":
        if last.get("role") == "tool":
            return ("tool_result", _block_text(last.get("content", "")))
        return ("user", _strip_reminders(_block_text(last.get("content") or "")))
    content = last.get("content", "")
    if isinstance(content, list):
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            return ("tool_result", _block_text(results[-1].get("content", "")))
        texts = [
            _strip_reminders(str(b.get("text", "")))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        texts = [t for t in texts if t]
        return ("user", texts[-1] if texts else "")
    return ("user", _strip_reminders(str(content)))


@dataclass
class Reply:
    """What the fake model says: some text, or one tool call."""

    text: str = ""
    tool_name: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)


def _tool_names(body: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        name = tool.get("name") or tool.get("function", {}).get("name")
        if name:
            names.append(str(name))
    return names


def script(body: dict[str, Any], api: str) -> Reply:
    """Decide the scripted reply for a request body."""
    kind, text = _last_turn(body, api)
    if kind == "tool_result":
        return Reply(text=f"done: {text.strip()[:40]}")
    tools = _tool_names(body)
    write = _WRITE_RE.search(text)
    if write and api == "anthropic" and CLAUDE_WRITE_TOOL in tools:
        path, content = write.group(1), write.group(2).strip()
        return Reply(
            tool_name=CLAUDE_WRITE_TOOL, tool_input={"file_path": path, "content": content}
        )
    match = _RUN_RE.search(text)
    if match and tools:
        command = match.group(1).strip()
        if api == "anthropic":
            return Reply(tool_name=CLAUDE_SHELL_TOOL, tool_input={"command": command})
        name = QWEN_SHELL_TOOL if QWEN_SHELL_TOOL in tools else None
        if name is None:
            name = next((t for t in tools if "shell" in t.lower()), tools[0])
        return Reply(tool_name=name, tool_input={"command": command})
    return Reply(text=f"reply to: {text}")


# ---------------------------------------------------------------- wire formats

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}{int(time.time() * 1000) % 10**8:08d}"


def _approx_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4)


def anthropic_message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]]
    if reply.tool_name:
        content = [
            {
                "type": "tool_use",
                "id": _new_id("toolu_fake"),
                "name": reply.tool_name,
                "input": reply.tool_input,
            }
        ]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": reply.text}]
        stop = "end_turn"
    return {
        "id": _new_id("msg_fake"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": _approx_tokens(body.get("messages")),
            "output_tokens": max(1, len(json.dumps(content)) // 4),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def anthropic_events(body: dict[str, Any], reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE events of a streamed Messages response, in Anthropic's order."""
    message = anthropic_message(body, reply)
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    block = message["content"][0]
    if block["type"] == "text":
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        yield "ping", {"type": "ping"}
        text = block["text"]
        for i in range(0, max(len(text), 1), 16):
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text[i : i + 16]},
                },
            )
    else:
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": dict(block, input={}),
            },
        )
        yield "ping", {"type": "ping"}
        payload = json.dumps(block["input"])
        half = len(payload) // 2
        for part in (payload[:half], payload[half:]):
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                },
            )
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _openai_usage(body: dict[str, Any], out: Any) -> dict[str, int]:
    prompt = _approx_tokens(body.get("messages"))
    completion = max(1, len(json.dumps(out)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _openai_tool_call(reply: Reply) -> dict[str, Any]:
    return {
        "id": _new_id("call_fake"),
        "type": "function",
        "function": {"name": reply.tool_name, "arguments": json.dumps(reply.tool_input)},
    }


def openai_completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_name:
        message["tool_calls"] = [_openai_tool_call(reply)]
    return {
        "id": _new_id("chatcmpl-fake"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_name else "stop",
            }
        ],
        "usage": _openai_usage(body, message),
    }


def openai_chunks(body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed completion."""
    base = {
        "id": _new_id("chatcmpl-fake"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    yield chunk({"role": "assistant", "content": ""})
    if reply.tool_name:
        call = _openai_tool_call(reply)
        yield chunk({"tool_calls": [dict(call, index=0)]})
        finish = "tool_calls"
    else:
        for i in range(0, max(len(reply.text), 1), 16):
            yield chunk({"content": reply.text[i : i + 16]})
        finish = "stop"
    final = chunk({}, finish)
    final["usage"] = _openai_usage(body, reply.text or reply.tool_input)
    yield final
    if (body.get("stream_options") or {}).get("include_usage"):
        yield dict(base, choices=[], usage=final["usage"])


# ---------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output quiet; requests are recorded instead

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return raw.decode("utf-8", "replace")

    def _send_json(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", _new_id("req_fake"))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", _new_id("req_fake"))
        self.end_headers()
        self.close_connection = True

    def _stream_responses(self, body: dict[str, Any]) -> None:
        """Codex: one streamed Responses answer; a stalled one is held open until stop()."""
        reply = fake_responses.script(body)
        self._start_stream()
        for event in fake_responses.events(body, reply):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        if reply.stall:
            self.server.fake.stalled.set()
            self.server.fake.stopping.wait()

    def _handle(self) -> None:
        body = self._read_body() if self.command in ("POST", "PUT", "PATCH") else None
        rec = Recorded(self.command, self.path, body, dict(self.headers.items()))
        self.server.fake.record(rec)
        path = self.path.split("?")[0].rstrip("/")
        if "://" in self.path.split("?")[0]:
            # A plain-HTTP request sent through us as a proxy: never forward it.
            self.server.fake.note_egress(f"{self.command} {self.path}")
            self._send_json({"error": "egress blocked by fake model"}, status=403)
        elif self.headers.get("Upgrade", "").lower() == "websocket":
            # Codex tries a WebSocket first; 426 sends it to HTTP streaming at once.
            # It may hang up before reading the answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send_json({"error": "websocket not supported by fake model"}, status=426)
        elif self.command == "POST" and path.endswith("/responses") and isinstance(body, dict):
            self._stream_responses(body)
        elif self.command == "POST" and path.endswith("/messages/count_tokens"):
            tokens = _approx_tokens(body.get("messages") if isinstance(body, dict) else body)
            self._send_json({"input_tokens": tokens})
        elif self.command == "POST" and path.endswith("/messages") and isinstance(body, dict):
            reply = script(body, "anthropic")
            if body.get("stream"):
                self._start_stream()
                for event, data in anthropic_events(body, reply):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
            else:
                self._send_json(anthropic_message(body, reply))
        elif (
            self.command == "POST" and path.endswith("/chat/completions") and isinstance(body, dict)
        ):
            reply = script(body, "openai")
            if body.get("stream"):
                self._start_stream()
                for item in openai_chunks(body, reply):
                    self.wfile.write(f"data: {json.dumps(item)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            else:
                self._send_json(openai_completion(body, reply))
        elif self.command == "GET" and path.endswith("/models"):
            self._send_json(
                {
                    "object": "list",
                    "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}],
                }
            )
        else:
            self.server.fake.note_unknown(f"{self.command} {self.path}")
            self._send_json({})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def do_CONNECT(self) -> None:
        """The CLIs get this server as their HTTPS proxy: refuse and log any tunnel."""
        self.server.fake.record(Recorded("CONNECT", self.path, None, dict(self.headers.items())))
        self.server.fake.note_egress(f"CONNECT {self.path}")
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_HEAD(self) -> None:
        self.server.fake.record(Recorded("HEAD", self.path, None, dict(self.headers.items())))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeModel


class FakeModel:
    """The fake model server. Use as `with FakeModel() as fm: ... fm.url ...`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[Recorded] = []
        self.unknown_paths: list[str] = []
        # Requests that tried to leave loopback through the proxy trap (see clis.py).
        self.egress_attempts: list[str] = []
        # Set when a Responses stream stalls (`STALL` prompt), and when the server stops.
        self.stalled = threading.Event()
        self.stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> FakeModel:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fake-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeModel is not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Base URL without `/v1` (what ANTHROPIC_BASE_URL wants)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """Base URL with `/v1` (what OPENAI_BASE_URL wants)."""
        return f"{self.url}/v1"

    # -- recording
    def record(self, rec: Recorded) -> None:
        with self._lock:
            self._requests.append(rec)

    def note_unknown(self, what: str) -> None:
        with self._lock:
            self.unknown_paths.append(what)

    def note_egress(self, what: str) -> None:
        with self._lock:
            self.egress_attempts.append(what)

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self.unknown_paths.clear()
            self.egress_attempts.clear()

    def model_requests(self) -> list[Recorded]:
        """Every Messages / chat-completions / Responses call, main or side."""
        return [r for r in self.requests if r.api in ("anthropic", "openai", "responses")]

    def main_requests(self) -> list[Recorded]:
        """Main-conversation model calls: the ones that offer tools."""
        return [r for r in self.requests if r.is_main]

    def side_requests(self) -> list[Recorded]:
        """Model calls that are not part of the main conversation."""
        return [r for r in self.model_requests() if not r.is_main]

    def conversation(self, index: int = -1) -> list[tuple[str, str]]:
        """The normalised conversation of the main request at `index`."""
        mains = self.main_requests()
        assert mains, f"no main requests recorded; got {[r.path for r in self.requests]}"
        return mains[index].conversation
