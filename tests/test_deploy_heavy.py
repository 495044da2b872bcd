"""The shipped deployment under heavy requests: gunicorn as `make run` runs it, and behind the
shipped nginx site, a light page still answers while large exports hold their connections."""

from __future__ import annotations

import http.client
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sessions_app.services.owner_token import owner_token

from .test_deploy import (
    DEPLOY,
    ROOT,
    _env,
    _free_port,
    _nginx,
    _site_behind,
    _wait_for_port,
    certificate,
)

__all__ = ["certificate"]  # the fixture, shared with test_deploy


@pytest.fixture(scope="module")
def large_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str]:
    """A data folder holding one imported session whose HTML export is some 6 MB (5,000
    turns): more than a client's and a server's socket buffers hold, so an export whose
    client stops reading holds its connection (and, without nginx, its thread)."""
    from bench.corpus import tiny_turns_session

    tmp_path = tmp_path_factory.mktemp("large")
    path = tiny_turns_session(tmp_path / "roots" / "-work-bench", turns=5000)
    env = _env(tmp_path)
    env["BRANCHBOARD_ROOTS"] = str(tmp_path / "roots")
    subprocess.run(
        [sys.executable, "manage.py", "import_sessions", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    return env, path.stem


def _held_export(port: int, url: str, *, tls: bool, token: str) -> tuple[socket.socket, bytes]:
    """A GET whose client reads the answer's first bytes, then nothing more (a tiny receive
    buffer, set before connecting): the answer's status line, and the socket to close."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(60)
    sock.connect(("127.0.0.1", port))
    if tls:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    auth = f"Authorization: Bearer {token}\r\n"  # the owner's way in, as a script's
    sock.sendall(f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n".encode())
    head = sock.recv(1024)
    return sock, head.split(b"\r\n", 1)[0]


def _get(
    port: int, url: str, *, tls: bool, token: str = ""
) -> tuple[int, dict[str, str], bytes, float]:
    """Status, headers, body and seconds of one GET, read whole."""
    if tls:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", port, context=context, timeout=30
        )
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.monotonic()
    try:
        conn.request("GET", url, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        body = response.read()
        return response.status, dict(response.headers), body, time.monotonic() - started
    finally:
        conn.close()


def _gunicorn(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "branchboard.wsgi",
            "-c",
            str(DEPLOY / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


@contextmanager
def _behind_nginx(
    tmp_path: Path, certificate: tuple[Path, Path], env: dict[str, str]
) -> Iterator[int]:
    """gunicorn with `env` behind the shipped nginx site on loopback: the HTTPS port."""
    nginx = _nginx()
    cert, key = certificate
    app_port, https_port, http_port = _free_port(), _free_port(), _free_port()
    (tmp_path / "site.conf").write_text(_site_behind(app_port, https_port, http_port, cert, key))
    temp = "".join(
        f"{kind}_temp_path {tmp_path}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nworker_processes 1;\n"
        f"events {{}}\nhttp {{\naccess_log off;\n{temp}include {tmp_path}/site.conf;\n}}\n"
    )
    gunicorn = _gunicorn(env, app_port, tmp_path / "gunicorn.log")
    nginx_log = (tmp_path / "nginx.log").open("wb")
    proxy = subprocess.Popen(
        [nginx, "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=nginx_log,
    )
    try:
        _wait_for_port(app_port, gunicorn, "gunicorn", tmp_path / "gunicorn.log")
        _wait_for_port(https_port, proxy, "nginx", tmp_path / "nginx.log")
        yield https_port
    finally:
        proxy.terminate()
        gunicorn.terminate()
        proxy.wait(timeout=30)
        gunicorn.wait(timeout=30)
        nginx_log.close()


def test_an_export_holding_a_thread_leaves_the_other_to_light_pages(
    tmp_path: Path, large_session: tuple[dict[str, str], str]
) -> None:
    """gunicorn as `make run` runs each worker (two threads), no nginx: one export streams
    to a client that stopped reading; a second is refused at once, a light page answers."""
    env, sid = large_session
    env = {**env, "BRANCHBOARD_WORKERS": "1", "BRANCHBOARD_THREADS": "2"}
    token = owner_token(folder=Path(env["BRANCHBOARD_DATA_DIR"]))
    port = _free_port()
    gunicorn = _gunicorn(env, port, tmp_path / "gunicorn.log")
    held = None
    try:
        _wait_for_port(port, gunicorn, "gunicorn", tmp_path / "gunicorn.log")
        held, status = _held_export(port, f"/sessions/{sid}/export.html", tls=False, token=token)
        assert status == b"HTTP/1.1 200 OK", status
        code, headers, body, _ = _get(port, f"/sessions/{sid}/export.md", tls=False, token=token)
        assert code == 503 and headers["Retry-After"] == "10", (code, body[:200])
        code, _, body, seconds = _get(port, "/recent/", tls=False, token=token)
        assert code == 200 and seconds < 10, (code, seconds)
    finally:
        if held is not None:
            held.close()
        gunicorn.terminate()
        gunicorn.wait(timeout=30)


def test_the_shipped_nginx_limits_heavy_requests_per_address(
    tmp_path: Path, certificate: tuple[Path, Path], large_session: tuple[dict[str, str], str]
) -> None:
    """Behind the shipped site, gunicorn with threads to spare: two exports to clients that
    stopped reading, and nginx itself refuses a third from that address (503, Retry-After)
    while a light page answers."""
    env, sid = large_session
    env = {**env, "BRANCHBOARD_WORKERS": "1", "BRANCHBOARD_THREADS": "8"}
    token = owner_token(folder=Path(env["BRANCHBOARD_DATA_DIR"]))
    held: list[socket.socket] = []
    with _behind_nginx(tmp_path, certificate, env) as https_port:
        try:
            for fmt in ("html", "md"):
                sock, status = _held_export(
                    https_port, f"/sessions/{sid}/export.{fmt}", tls=True, token=token
                )
                held.append(sock)
                assert status == b"HTTP/1.1 200 OK", status
            code, headers, body, _ = _get(
                https_port, f"/sessions/{sid}/export.html", tls=True, token=token
            )
            assert code == 503 and headers["Retry-After"] == "10", (code, body[:200])
            assert body.startswith(b"busy with other large requests"), body[:200]  # nginx's own
            code, _, _, seconds = _get(https_port, "/recent/", tls=True, token=token)
            assert code == 200 and seconds < 10, (code, seconds)
        finally:
            for sock in held:
                sock.close()


def _post(port: int, url: str, body: bytes) -> int:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        conn.request("POST", url, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_the_shipped_nginx_limits_sign_ins_per_address(
    tmp_path: Path, certificate: tuple[Path, Path]
) -> None:
    """django-axes locks one account per address; an address that tries a new username each
    time is stopped by nginx: past a burst of sign-in POSTs it answers 429 and the app sees
    (and records) none of them, while the sign-in page itself still answers."""
    env = {**_env(tmp_path), "BRANCHBOARD_WORKERS": "1", "BRANCHBOARD_TEAM_MODE": "1"}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    with _behind_nginx(tmp_path, certificate, env) as https_port:
        statuses = [
            _post(https_port, url, f"username=user{n}&password=wrong".encode())
            for n in range(15)
            for url in ("/accounts/login/", "/admin/login/")
        ]
        # 1 now and a burst of 10 reach the app (whatever it answers); the rest are nginx's.
        assert 429 not in statuses[:11], statuses
        assert statuses[-10:] == [429] * 10, statuses
        code, _, _, _ = _get(https_port, "/accounts/login/", tls=True)
        assert code == 200, code
