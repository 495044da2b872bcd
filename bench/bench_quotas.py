"""Benchmark: what one long line, and one small push, can make a hub spend.

In fresh child processes (their peak RSS read from /proc: VmHWM, reset before each step),
on a fresh database each:

1. a session whose one tool output is a line of `--line-mb` MB (64 and 256 by default):
   its records indexed as a hub's commit of a big file does (`hub_import(catch_up=False)`),
   then the search and usage catch-up (`session_catch_up`): the peak RSS of each step;
   then "show all" of that output (`/sessions/<id>/records/2/output/0/`, Django's test
   client): the page's bytes and the peak RSS;
2. a zstd bomb pushed to the hub (`/api/hub/chunk` then `commit`, through Django's test
   client as a machine's push would): chunks of 32 MiB of one repeated session line, about
   3 KB each on the wire; the bytes on the wire, the bytes stored on the hub's disk, the
   database's growth, the answers and the seconds; once with the hub's default quota and
   once with each `--quota-mb`.

`--code DIR` runs the children on another checkout (say the code before this change,
`git archive <commit> | tar -x -C DIR`), with this interpreter: the same figures, before
and after, in one run.

    .venv/bin/python bench/bench_quotas.py [--line-mb 64,256] [--bomb-chunks 4]
        [--quota-mb 64] [--code DIR] [--postgres] [--parts lines,bomb]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import fresh_database  # noqa: E402 (needs the path above)

MB = 1 << 20
PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"

# The child: Django set up on the environment's database, then one of the parts.
CHILD = r"""
import json, os, sys, time
from pathlib import Path
import django
django.setup()

def peak_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

def reset():
    Path("/proc/self/clear_refs").write_text("5")

part, arg = sys.argv[1], json.loads(sys.argv[2])
out = {}
if part == "line":
    from django.test import Client
    from sessions_app.services.hub.indexing import hub_import, session_catch_up
    root, path = Path(arg["root"]), Path(arg["path"])
    out["rss_start"] = peak_mb()
    reset(); start = time.perf_counter()
    session = hub_import(root, path, catch_up=False)
    out["records_s"], out["records_rss"] = time.perf_counter() - start, peak_mb()
    reset(); start = time.perf_counter()
    session_catch_up(session)
    out["catch_up_s"], out["catch_up_rss"] = time.perf_counter() - start, peak_mb()
    reset(); start = time.perf_counter()
    response = Client(HTTP_HOST="localhost").get(f"/sessions/{session.session_id}/records/2/output/0/")
    body = response.content
    out["show_all_s"], out["show_all_rss"] = time.perf_counter() - start, peak_mb()
    out["show_all_status"], out["show_all_bytes"] = response.status_code, len(body)
    out["show_all_parts"] = body.count(b"Next part")
else:
    import hashlib, urllib.parse
    try:
        from compression import zstd
    except ImportError:
        from backports import zstd
    from django.contrib.auth.models import Permission, User
    from django.db import connection
    from django.test import Client
    from sessions_app.models import ApiToken
    user = User.objects.create_user("alice")
    user.user_permissions.add(Permission.objects.get(codename="push_sessions"))
    _, token = ApiToken.issue(name="bench", user=user)
    sid = arg["sid"]
    path = f".claude/projects/-work-bomb/{sid}.jsonl"
    line = json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": sid,
                       "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/bomb",
                       "message": {"role": "user", "content": "a" * 120}}).encode() + b"\n"
    block = line * ((32 << 20) // len(line))
    packed = zstd.compress(block, level=19)
    client, held, whole = Client(HTTP_HOST="localhost"), b"", hashlib.sha256()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    def db_bytes():
        if connection.vendor == "postgresql":
            with connection.cursor() as c:
                c.execute("SELECT pg_database_size(current_database())")
                return c.fetchone()[0]
        name = Path(connection.settings_dict["NAME"])
        return sum(p.stat().st_size for p in name.parent.glob(name.name + "*"))
    before = db_bytes()
    wire, answers = 0, []
    reset(); start = time.perf_counter()
    offset = 0
    for n in range(arg["chunks"]):
        head = hashlib.sha256(held[:4096]).hexdigest() if offset else ""
        tail = hashlib.sha256(held[-65536:]).hexdigest() if offset else ""
        query = urllib.parse.urlencode({"namespace": "alice@bomb", "path": path,
            "offset": offset, "length": len(block), "sha256": hashlib.sha256(block).hexdigest(),
            "head": head, "tail": tail, "staged": "1"})
        r = client.post(f"/api/hub/chunk?{query}", packed, content_type="application/zstd", **auth)
        wire += len(packed)
        answers.append(r.status_code)
        if r.status_code != 200:
            out["refusal"] = r.json()["error"]
            break
        offset += len(block); held += block; whole.update(block)
    if answers[-1] == 200:
        query = urllib.parse.urlencode({"namespace": "alice@bomb", "path": path,
            "size": offset, "sha256": whole.hexdigest()})
        r = client.post(f"/api/hub/commit?{query}", b"", content_type="application/zstd", **auth)
        answers.append(r.status_code)
        if r.status_code == 200 and not r.json().get("caught_up", True):
            query = urllib.parse.urlencode({"namespace": "alice@bomb", "path": path})
            r = client.post(f"/api/hub/catch-up?{query}", b"", content_type="application/zstd", **auth)
            answers.append(r.status_code)
    out["seconds"], out["rss"] = time.perf_counter() - start, peak_mb()
    out["wire"], out["answers"] = wire, answers
    hub = Path(os.environ["BRANCHBOARD_DATA_DIR"]) / "hub"
    out["stored"] = sum(p.stat().st_size for p in hub.rglob("*") if p.is_file())
    out["db_growth"] = db_bytes() - before
print("RESULT " + json.dumps(out))
"""


def child(code: Path, env: dict[str, str], part: str, arg: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, part, json.dumps(arg)],
        cwd=code,
        env=dict(env, PYTHONPATH=str(code)),
        capture_output=True,
        text=True,
    )
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise SystemExit(f"child failed ({done.returncode}):\n{done.stderr[-3000:]}")


def long_line_session(home: Path, mb: int) -> tuple[Path, Path]:
    """A session of two turns whose tool output is one line of `mb` MB."""
    sid = str(uuid.uuid4())
    root = home / ".claude" / "projects"
    folder = root / "-work-bench"
    folder.mkdir(parents=True)
    path = folder / f"{sid}.jsonl"

    def rec(kind: str, uid: str, parent: str | None, content: object) -> bytes:
        record = {
            "type": kind,
            "uuid": uid,
            "parentUuid": parent,
            "sessionId": sid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/work/bench",
            "message": {"role": kind, "content": content},
        }
        if kind == "assistant":
            record["message"].update(id=f"msg_{uid}", model="claude-test")
            record["message"]["usage"] = {"input_tokens": 3, "output_tokens": 2}
        return json.dumps(record).encode() + b"\n"

    call = [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat"}}]
    with path.open("wb") as f:
        f.write(rec("user", "u1", None, "show me the log"))
        f.write(rec("assistant", "a1", "u1", call))
        head = json.dumps(
            {
                "type": "user",
                "uuid": "r1",
                "parentUuid": "a1",
                "sessionId": sid,
                "timestamp": "2026-01-01T00:00:01.000Z",
                "cwd": "/work/bench",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "@@"}],
                },
            }
        ).encode()
        before, after = head.split(b"@@")
        f.write(before)
        piece = b"log line of a long output 0123456789\\n" * (MB // 38)
        for _ in range(mb):
            f.write(piece[:MB])
        f.write(after + b"\n")
        f.write(rec("assistant", "a2", "r1", [{"type": "text", "text": "it is long"}]))
    return root, path


def migrate(code: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"],
        cwd=code,
        env=dict(env, PYTHONPATH=str(code)),
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--line-mb", default="64,256")
    parser.add_argument("--bomb-chunks", type=int, default=4)
    parser.add_argument("--quota-mb", default="64")
    parser.add_argument("--code", type=Path, default=ROOT)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--parts", default="lines,bomb")
    parser.add_argument("--tmpdir", default=None)
    args = parser.parse_args()
    backend = "postgresql" if args.postgres else "sqlite"
    code = args.code.resolve()
    print(f"code: {code}; database: {backend}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-quotas-", dir=args.tmpdir))
    try:
        if "lines" in args.parts:
            for mb in [int(x) for x in args.line_mb.split(",")]:
                home = tmp / f"home-{mb}"
                root, path = long_line_session(home, mb)
                data = tmp / f"data-{mb}"
                data.mkdir(mode=0o700)
                with fresh_database(backend, data, PG_URL, f"bench_quotas_{os.getpid()}") as env:
                    env["HOME"] = str(home)
                    env.pop("BRANCHBOARD_ROOTS", None)
                    migrate(code, env)
                    r = child(code, env, "line", {"root": str(root), "path": str(path)})
                print(
                    f"line of {mb} MB: records {r['records_s']:.1f} s, peak RSS "
                    f"{r['records_rss']:.0f} MB; catch-up {r['catch_up_s']:.1f} s, peak RSS "
                    f"{r['catch_up_rss']:.0f} MB; show all: {r['show_all_status']}, "
                    f"{r['show_all_bytes'] / 1e6:.2f} MB page, {r['show_all_s']:.1f} s, peak "
                    f"RSS {r['show_all_rss']:.0f} MB (process at start {r['rss_start']:.0f} MB)"
                )
                shutil.rmtree(home, ignore_errors=True)
                shutil.rmtree(data, ignore_errors=True)
        if "bomb" in args.parts:
            for quota in [None, *(int(x) for x in args.quota_mb.split(",") if x)]:
                data = tmp / f"data-bomb-{quota}"
                data.mkdir(mode=0o700)
                with fresh_database(backend, data, PG_URL, f"bench_quotas_{os.getpid()}") as env:
                    env.pop("BRANCHBOARD_ROOTS", None)
                    if quota is not None:
                        env["BRANCHBOARD_HUB_QUOTA_BYTES"] = str(quota * MB)
                    migrate(code, env)
                    arg = {"sid": str(uuid.uuid4()), "chunks": args.bomb_chunks}
                    r = child(code, env, "bomb", arg)
                said = "default quota" if quota is None else f"quota {quota} MiB"
                print(
                    f"zstd bomb, {said}: {r['wire'] / 1e3:.1f} KB on the wire, answers "
                    f"{r['answers']}, {r['stored'] / 1e6:.1f} MB stored on the hub, database "
                    f"+{r['db_growth'] / 1e6:.1f} MB, {r['seconds']:.1f} s, peak RSS "
                    f"{r['rss']:.0f} MB" + (f"; refused: {r['refusal']}" if "refusal" in r else "")
                )
                shutil.rmtree(data, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
