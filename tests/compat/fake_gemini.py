"""A fake Gemini API on 127.0.0.1 for the real `gemini` CLI: replies `reply to: <prompt>`.

`with FakeGemini() as fg:` gives `fg.url` (for `GOOGLE_GEMINI_BASE_URL`). It answers
`:streamGenerateContent?alt=sse` (one SSE event), `:generateContent`, `:countTokens` and
the models list, and records every generate request's `contents` (`fg.requests`). A
prompt ending in `STALL here` is never answered: `fg.stalled` is set and the reply waits until the
client goes away or the server stops (a run to stop).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 5, "totalTokenCount": 105}


def _last_user_text(contents: list[dict[str, Any]]) -> str:
    for content in reversed(contents):
        if content.get("role") == "user":
            texts = [p.get("text", "") for p in content.get("parts", []) if isinstance(p, dict)]
            if any(t.strip() for t in texts):
                return " ".join(t for t in texts if t.strip())
    return ""


class FakeGemini:
    """The server; `requests` holds the `contents` of each generate request, in order."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.stalled = threading.Event()
        self.stopping = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                owner.paths.append(self.path)
                self._json({"models": [{"name": "models/gemini-2.5-flash"}]})

            def do_POST(self) -> None:
                owner.paths.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if ":countTokens" in self.path:
                    self._json({"totalTokens": 10})
                    return
                if "GenerateContent" not in self.path and "generateContent" not in self.path:
                    self._json({})
                    return
                contents = body.get("contents") or []
                owner.requests.append({"path": self.path, "contents": contents})
                prompt = _last_user_text(contents)
                if prompt.endswith("STALL here") and "streamGenerateContent" in self.path:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    self.wfile.flush()
                    owner.stalled.set()
                    owner.stopping.wait(300)  # until the server stops: the run is stopped
                    return
                if "streamGenerateContent" not in self.path:
                    # A side request (a summary, a title, a check): a short JSON answer.
                    text = '{"reasoning": "", "next_speaker": "user"}'
                    self._json(
                        {
                            "candidates": [
                                {
                                    "content": {"role": "model", "parts": [{"text": text}]},
                                    "finishReason": "STOP",
                                }
                            ],
                            "usageMetadata": USAGE,
                        }
                    )
                    return
                chunk = {
                    "candidates": [
                        {
                            "content": {
                                "role": "model",
                                "parts": [{"text": f"reply to: {prompt}"}],
                            },
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": USAGE,
                    "modelVersion": "gemini-2.5-flash",
                }
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeGemini:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def main_requests(self) -> list[dict[str, Any]]:
        """The streamed (conversation) requests, in order."""
        return [r for r in self.requests if "streamGenerateContent" in r["path"]]

    def prompts(self, i: int) -> list[str]:
        """The user texts the `i`th conversation request sent (function responses left out)."""
        found = []
        for content in self.main_requests()[i]["contents"]:
            if content.get("role") != "user":
                continue
            texts = [p["text"] for p in content.get("parts", []) if isinstance(p.get("text"), str)]
            if texts:
                found.append("".join(texts))
        return found

    def sent_prompts(self, i: int = -1) -> list[str]:
        """The prompts the `i`th conversation request carried (the last by default), the
        CLI's fresh context preamble cut off and blank texts left out."""
        found = []
        for text in self.prompts(i if i >= 0 else len(self.main_requests()) + i):
            if "</session_context>" in text:
                text = text.split("</session_context>", 1)[1]
            if text.strip():
                found.append(text)
        return found
