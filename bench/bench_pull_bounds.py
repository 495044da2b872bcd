"""Benchmark: what a hub can make `manage.py pull_sessions` spend (peak RSS, time, output).

Two cases, each `pull_sessions` run as a subprocess on a fresh SQLite data folder against
a fake hub on loopback (a thread of this process), beside the same command when the hub
offers nothing. Its peak RSS is the child's VmHWM, read from /proc/<pid>/status every
10 ms until it exits (the high-water mark only grows; the last reading is its peak). Not
ru_maxrss from wait4: Linux carries the parent's high-water mark into a child it spawns
(`exec` keeps the larger of the two), so a bench that holds a big file in memory reads
its own size there. The file is made by a process of its own for the same reason.

- hostile: the `pulls` answer is `--answer-mb` MB of JSON (generated as it is sent, never
  whole here): a list of files whose paths the machine refuses, so each would be one
  line of "not pulled". What the command printed is counted in bytes.
- big file: one Claude session of `--mb` MB in lines of `--line-kb` KB (a pasted log, a
  tool's output: a real session holds lines of megabytes) pulled and imported.

    .venv/bin/python bench/bench_pull_bounds.py [--answer-mb 300] [--mb 63] [--line-kb 8192]
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
from collections.abc import Iterator
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


def session_file(path: Path, mb: int, line_kb: int) -> tuple[int, str]:
    """A Claude session of about `mb` MB: user and assistant records of about `line_kb` KB."""
    digest, size, parent = hashlib.sha256(), 0, None
    n = 0
    with path.open("wb") as f:
        while size < mb << 20:
            me = str(uuid.UUID(int=n + 1))
            role = "user" if n % 2 == 0 else "assistant"
            # Text that compresses as a real log does (not a run of one letter).
            words = " ".join(f"w{(n * 7919 + i * 104729) % 100003}" for i in range(line_kb * 150))
            record = {
                "type": role,
                "uuid": me,
                "parentUuid": parent,
                "sessionId": SESSION,
                "timestamp": "2026-01-02T03:04:05.000Z",
                "cwd": "/home/dev/big",
                "message": {"role": role, "content": f"{n} {words}"},
            }
            line = orjson.dumps(record) + b"\n"
            f.write(line)
            digest.update(line)
            size += len(line)
            parent, n = me, n + 1
    return size, digest.hexdigest()


def compress(raw: Path, packed: Path) -> None:
    packer = zstd.ZstdCompressor(level=3)
    with raw.open("rb") as src, packed.open("wb") as out:
        while block := src.read(4 << 20):
            out.write(packer.compress(block))
        out.write(packer.flush())


def hostile_answer(mb: int) -> tuple[int, Iterator[bytes]]:
    """A `pulls` answer of `mb` MB: many files, each path refused by the machine (it names
    no CLI's folder), so an unbounded client prints one line for each."""
    entry = orjson.dumps(
        {"path": "nowhere/" + "x" * 180 + ".jsonl", "session_id": "x", "size": 1, "sha256": "0"}
    )
    count = (mb << 20) // (len(entry) + 1)
    head, tail = b'{"files": [', b"]}"
    size = len(head) + count * (len(entry) + 1) - 1 + len(tail)

    def blocks() -> Iterator[bytes]:
        yield head
        many = 4096
        block = b",".join([entry] * many)
        left = count
        while left:
            n = min(many, left)
            part = block if n == many else b",".join([entry] * n)
            yield (b"," if left != count else b"") + part
            left -= n
        yield tail

    return size, blocks()


class FakeHub:
    def __init__(self) -> None:
        self.mode = "nothing"  # nothing, hostile, file
        self.answer_mb = 0
        self.length = True  # the hostile answer says its Content-Length
        self.file: tuple[Path, int, str] | None = None  # packed, size, sha256
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, size: int | None, blocks: Iterator[bytes]) -> None:
                self.send_response(200)
                if size is None:
                    self.send_header("Connection", "close")  # the body ends when it closes
                else:
                    self.send_header("Content-Length", str(size))
                self.end_headers()
                try:
                    for block in blocks:
                        self.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: what a bounded client does

            def _json(self, data: object) -> None:
                body = orjson.dumps(data)
                self._send(len(body), iter([body]))

            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/api/hub/pulls":
                    if hub.mode == "hostile":
                        size, blocks = hostile_answer(hub.answer_mb)
                        return self._send(size if hub.length else None, blocks)
                    if hub.mode == "file" and hub.file is not None:
                        _, size, sha256 = hub.file
                        files = [
                            {
                                "path": HUB_PATH,
                                "session_id": SESSION,
                                "size": size,
                                "sha256": sha256,
                                "made_by": "bench",
                                "own": True,
                            }
                        ]
                        return self._json({"files": files, "held": []})
                    return self._json({"files": [], "held": []})
                assert hub.file is not None
                packed = hub.file[0]

                def blocks() -> Iterator[bytes]:
                    with packed.open("rb") as f:
                        while block := f.read(1 << 20):
                            yield block

                self._send(packed.stat().st_size, blocks())

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._json({"ok": True})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def high_water(pid: int) -> int:
    """The process's peak RSS so far (kB), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MB), bytes printed and the last line of one `pull_sessions`."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "pull_sessions"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert child.stdout is not None
    peak = 0

    def watch() -> None:
        nonlocal peak
        while child.poll() is None:
            peak = max(peak, high_water(child.pid))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    printed, last = 0, b""
    while block := child.stdout.read(1 << 20):  # counted, not kept
        printed += len(block)
        last = (last + block)[-4096:]
    child.wait()
    watcher.join()
    took = time.perf_counter() - started
    lines = last.decode(errors="replace").strip().splitlines()
    return took, peak / 1024, printed, lines[-1][:160] if lines else ""


def main() -> None:
    if sys.argv[1:2] == ["--make"]:  # the file, made by a process of its own
        raw = Path(sys.argv[2])
        size, sha256 = session_file(raw, int(sys.argv[3]), int(sys.argv[4]))
        compress(raw, raw.with_suffix(".jsonl.zst"))
        print(size, sha256)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answer-mb", type=int, default=300, help="the hostile answer (MB)")
    parser.add_argument("--mb", type=int, default=63, help="the pulled file's size (MB)")
    parser.add_argument("--line-kb", type=int, default=8192, help="its lines' size (KB)")
    parser.add_argument("--only", choices=["hostile", "file"], help="one case only")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_pull_bounds_"))
    try:
        hub = FakeHub()
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
        rows = [("pull_sessions, nothing offered", *run(env))]
        if args.only in (None, "hostile"):
            hub.mode, hub.answer_mb = "hostile", args.answer_mb
            rows.append((f"pulls answer of {args.answer_mb} MB JSON", *run(env)))
            hub.length = False
            rows.append(("the same, no Content-Length", *run(env)))
        if args.only in (None, "file"):
            raw, packed = work / "session.jsonl", work / "session.jsonl.zst"
            made = subprocess.run(
                [sys.executable, __file__, "--make", str(raw), str(args.mb), str(args.line_kb)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            size, sha256 = int(made[0]), made[1]
            hub.mode, hub.file = "file", (packed, size, sha256)
            rows.append((f"a file of {size / 1e6:.0f} MB, lines of {args.line_kb} KB", *run(env)))
            pulled = home / ".claude" / "projects" / "-home-dev-big" / f"{SESSION}.jsonl"
            written = pulled.stat().st_size if pulled.exists() else 0
            print(f"file: {size:,} bytes, {packed.stat().st_size:,} zstd; written: {written:,}")
        print(f"{'':44} {'wall s':>8} {'peak RSS MB':>12} {'printed':>12}  last line")
        for name, took, rss, printed, last in rows:
            print(f"{name:44} {took:8.2f} {rss:12.0f} {printed:12,}  {last}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
