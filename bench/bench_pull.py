"""Benchmark: the memory and time of `manage.py pull_sessions` taking one big file.

A fake hub on loopback (a thread of this process, serving the file's zstd frame from
disk) offers one generated Claude session of `--mb` MB; `pull_sessions` runs as a
subprocess on a fresh SQLite data folder, and its peak RSS (ru_maxrss of the child,
from wait4) and wall time are set beside, in the same run:
- the same command pulling nothing (the hub offers no file): Django, the database, the
  command's own start;
- `cp` + `sync` of the same bytes (the least a pull writes).
The pull's time includes its import of the file (records, search words and usage are
indexed later by import_sessions, as after any pull).

    .venv/bin/python bench/bench_pull.py [--mb 1024] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

ROOT = Path(__file__).resolve().parent.parent
SESSION = "0b7d6a1c-3f2e-4c5d-9a8b-7e6f5d4c3b2a"
HUB_PATH = f".claude/projects/-home-dev-big/{SESSION}.jsonl"


def session_file(path: Path, mb: int) -> tuple[int, str]:
    """A Claude session of about `mb` MB: user and assistant turns of about 1 KB."""
    digest, size, parent = hashlib.sha256(), 0, None
    text = "lorem ipsum dolor sit amet " * 30
    with path.open("wb") as f:
        n = 0
        while size < mb << 20:
            me = str(uuid.UUID(int=n + 1))
            role = "user" if n % 2 == 0 else "assistant"
            record = {
                "type": role,
                "uuid": me,
                "parentUuid": parent,
                "sessionId": SESSION,
                "timestamp": "2026-01-02T03:04:05.000Z",
                "cwd": "/home/dev/big",
                "message": {"role": role, "content": f"{n} {text}"},
            }
            line = orjson.dumps(record) + b"\n"
            f.write(line)
            digest.update(line)
            size += len(line)
            parent, n = me, n + 1
    return size, digest.hexdigest()


def compress(raw: Path, packed: Path) -> None:
    """One zstd frame of `raw`, made a block at a time."""
    packer = zstd.ZstdCompressor(level=3)
    with raw.open("rb") as src, packed.open("wb") as out:
        while block := src.read(4 << 20):
            out.write(packer.compress(block))
        out.write(packer.flush())


class FakeHub:
    def __init__(self, packed: Path, size: int, sha256: str) -> None:
        self.offer = False
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, data: object) -> None:
                body = orjson.dumps(data)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/api/hub/pulls":
                    files = [
                        {"path": HUB_PATH, "session_id": SESSION, "size": size, "sha256": sha256}
                    ]
                    return self._json({"files": files if hub.offer else []})
                self.send_response(200)
                self.send_header("Content-Length", str(packed.stat().st_size))
                self.end_headers()
                with packed.open("rb") as f:
                    shutil.copyfileobj(f, self.wfile, 1 << 20)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._json({"ok": True})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def run(env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (MB) of one `pull_sessions`, and its last line."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "pull_sessions"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert child.stdout is not None
    out = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"pull_sessions failed:\n{out}")
    return took, usage.ru_maxrss / 1024, out.strip().splitlines()[-1]


def cp_sync(src: Path, dst: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["cp", str(src), str(dst)], check=True)
    subprocess.run(["sync", str(dst)], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="the pulled file's size (MB)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_pull_"))
    try:
        raw, packed = work / "session.jsonl", work / "session.jsonl.zst"
        size, sha256 = session_file(raw, args.mb)
        compress(raw, packed)
        hub = FakeHub(packed, size, sha256)
        home, data = work / "home", work / "data"
        (home / ".claude" / "projects").mkdir(parents=True)
        data.mkdir(mode=0o700)
        login = data / "hub.json"
        login.write_bytes(
            orjson.dumps({"url": hub.url, "namespace": "bench@machine", "token": "t"})
        )
        login.chmod(0o600)
        env = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BRANCHBOARD_ROOTS")
        }
        env.update(HOME=str(home), BRANCHBOARD_DATA_DIR=str(data))
        run(env)  # the first run makes the database's tables
        idle_s, idle_mb, _ = run(env)
        hub.offer = True
        pull_s, pull_mb, said = run(env)
        pulled = home / ".claude" / "projects" / "-home-dev-big" / f"{SESSION}.jsonl"
        assert pulled.stat().st_size == size, "the pulled file is not the hub's"
        copy_s = cp_sync(raw, work / "copy.jsonl")
        print(f"file: {size / 1e6:,.0f} MB raw, {packed.stat().st_size / 1e6:,.0f} MB zstd; {said}")
        print(f"{'':34} {'wall s':>8} {'peak RSS MB':>12}")
        print(f"{'pull_sessions, nothing offered':34} {idle_s:8.2f} {idle_mb:12.0f}")
        print(f"{'pull_sessions, the file':34} {pull_s:8.2f} {pull_mb:12.0f}")
        print(f"{'cp + sync of the same bytes':34} {copy_s:8.2f} {'':>12}")
        print(f"pull peak RSS above the idle command: {pull_mb - idle_mb:,.0f} MB")
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
