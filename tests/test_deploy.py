"""Everything in deploy/ is at least parsed or started by a test."""

from __future__ import annotations

import configparser
import http.client
import os
import shutil
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")
    }
    env.update(
        BRANCHBOARD_DATA_DIR=str(tmp_path / "data"), BRANCHBOARD_ROOTS=str(tmp_path / "none")
    )
    return env


def test_gunicorn_config_serves_the_dashboard(tmp_path: Path) -> None:
    env = _env(tmp_path)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
    )
    port = _free_port()
    env["BRANCHBOARD_WORKERS"] = "1"
    server = subprocess.Popen(
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
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    body = response.read().decode()
                    headers = response.headers
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
                assert time.monotonic() < deadline, "gunicorn did not answer in 30 s"
                time.sleep(0.1)
        assert "branchboard" in body
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/static/sessions_app/htmx.min.js", timeout=5
        ) as r:
            assert r.status == 200 and len(r.read()) > 10_000
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    "unit", ["branchboard-web.service", "branchboard-importer.service", "branchboard-hub.service"]
)
def test_systemd_units_parse_and_point_at_real_commands(unit: str) -> None:
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read(DEPLOY / unit)
    assert {"Unit", "Service", "Install"} <= set(parser.sections())
    command = parser["Service"]["ExecStart"]
    assert command.startswith("/srv/branchboard/.venv/bin/")
    if "manage.py" in command:
        subcommand = command.split("manage.py", 1)[1].split()[0]
        assert (ROOT / "sessions_app/management/commands" / f"{subcommand}.py").exists()
    else:
        assert "deploy/gunicorn.conf.py" in command
    assert parser["Service"]["EnvironmentFile"] == "/etc/branchboard/env"
    if shutil.which("systemd-analyze"):
        result = subprocess.run(
            ["systemd-analyze", "verify", str(DEPLOY / unit)], capture_output=True, text=True
        )
        assert "Unknown key" not in result.stderr and "Unknown section" not in result.stderr


def test_env_example_documents_every_setting() -> None:
    documented = {
        line.split("=", 1)[0].lstrip("# ").strip()
        for line in (DEPLOY / "env.example").read_text().splitlines()
        if "=" in line and line.lstrip("# ").split("=", 1)[0].isupper()
    }
    settings_text = (ROOT / "branchboard/settings.py").read_text() + (
        DEPLOY / "gunicorn.conf.py"
    ).read_text()
    import re

    used = set(re.findall(r'"((?:BRANCHBOARD|DATABASE)_[A-Z_]+)"', settings_text))
    assert used <= documented, used - documented


def _nginx() -> str:
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if nginx is None:
        pytest.skip(
            "nginx is not installed (apt-get install nginx-light) so its site cannot be checked"
        )
    return nginx


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A throwaway self-signed certificate and its key, made once: the tests only read them."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_nginx_site_is_valid(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    nginx = _nginx()
    cert, key = certificate
    site = (DEPLOY / "nginx-branchboard.conf").read_text()
    site = site.replace("/etc/letsencrypt/live/branchboard.example.com/fullchain.pem", str(cert))
    site = site.replace("/etc/letsencrypt/live/branchboard.example.com/privkey.pem", str(key))
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\naccess_log off;\nclient_body_temp_path {tmp_path};\ninclude {tmp_path}/site.conf;\n}}\n"
    )
    result = subprocess.run(
        [nginx, "-t", "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def _wait_for_port(port: int, process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert process.poll() is None, f"{what} exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"{what} did not listen in 30 s"
            time.sleep(0.1)


def _site_behind(app_port: int, https_port: int, http_port: int, cert: Path, key: Path) -> str:
    """The shipped site, moved to loopback test ports; each edit must find its target."""
    site = (DEPLOY / "nginx-branchboard.conf").read_text()
    edits = {
        "server 127.0.0.1:8000 fail_timeout=0;": f"server 127.0.0.1:{app_port} fail_timeout=0;",
        # The hub's push pool is not running here: its upstream falls back to the pages'.
        "server 127.0.0.1:8001 fail_timeout=0;": f"server 127.0.0.1:{_free_port()};",
        "server 127.0.0.1:8000 backup;": f"server 127.0.0.1:{app_port} backup;",
        "listen 443 ssl http2;": f"listen 127.0.0.1:{https_port} ssl http2;",
        "listen 80;": f"listen 127.0.0.1:{http_port};",
        "/etc/letsencrypt/live/branchboard.example.com/fullchain.pem": str(cert),
        "/etc/letsencrypt/live/branchboard.example.com/privkey.pem": str(key),
    }
    for old, new in edits.items():
        assert site.count(old) == 1, f"the site no longer has {old!r}"
        site = site.replace(old, new)
    return "\n".join(line for line in site.splitlines() if "listen [::]" not in line)


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-proxy", "no-trusted-proxy"])
def test_audit_log_records_the_client_address_through_nginx(
    tmp_path: Path, certificate: tuple[Path, Path], trusted: bool
) -> None:
    """A write through the shipped nginx site, from 127.0.0.7, with a forged header."""
    nginx = _nginx()
    cert, key = certificate
    roots = tmp_path / "roots"
    folder = roots / "-home-dev-code-webapp"
    folder.mkdir(parents=True)
    session_id = "d62afd75-12b1-4077-921c-1fa1eda79364"
    shutil.copy(ROOT / "tests/fixtures/cli/claude" / folder.name / f"{session_id}.jsonl", folder)
    env = _env(tmp_path)
    env.update(
        BRANCHBOARD_ROOTS=str(roots),
        BRANCHBOARD_TRUSTED_PROXY="1" if trusted else "0",
        BRANCHBOARD_WORKERS="1",
    )
    manage = [sys.executable, "manage.py"]
    # The import sets up the fresh database first (a separate migrate is one start-up more).
    subprocess.run([*manage, "import_sessions", "-v", "0"], cwd=ROOT, env=env, check=True)
    token = subprocess.run(
        [*manage, "create_api_token", "--name", "deploy-test"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()

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
    logs = {name: (tmp_path / f"{name}.log").open("wb") for name in ("gunicorn", "nginx")}
    gunicorn = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "branchboard.wsgi",
            "-c",
            str(DEPLOY / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{app_port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=logs["gunicorn"],
    )
    proxy = subprocess.Popen(
        [nginx, "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=logs["nginx"],
    )
    try:
        _wait_for_port(app_port, gunicorn, "gunicorn", tmp_path / "gunicorn.log")
        _wait_for_port(https_port, proxy, "nginx", tmp_path / "nginx.log")
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        client = http.client.HTTPSConnection(
            "127.0.0.1", https_port, source_address=("127.0.0.7", 0), context=context, timeout=60
        )
        client.request(
            "POST",
            f"/api/sessions/{session_id}/fork",
            body=b"{}",
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "X-Forwarded-For": "203.0.113.9",  # a client's try at naming itself
            },
        )
        response = client.getresponse()
        assert response.status == 201, response.read()
        client.close()
    finally:
        proxy.terminate()
        gunicorn.terminate()
        proxy.wait(timeout=30)
        gunicorn.wait(timeout=30)
        for log in logs.values():
            log.close()
    with sqlite3.connect(tmp_path / "data" / "branchboard.sqlite3") as db:
        addresses = [
            row[0] for row in db.execute("SELECT remote_addr FROM sessions_app_auditentry")
        ]
    assert addresses == ["127.0.0.7" if trusted else "127.0.0.1"]


def _push_token(env: dict[str, str]) -> str:
    """A token of a user who may push (the hub's endpoints), in a fresh database."""
    script = (
        "from django.contrib.auth.models import User, Permission\n"
        "from sessions_app.models import ApiToken\n"
        "u = User.objects.create_user('alice')\n"
        "u.user_permissions.add(Permission.objects.get(codename='push_sessions'))\n"
        "print(ApiToken.issue(name='laptop', user=u)[1])\n"
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


SLOW_CHUNK = (
    "/api/hub/chunk?namespace=alice@laptop&path=.claude/projects/-p/"
    "d62afd75-12b1-4077-921c-1fa1eda79364.jsonl&offset=0&length=10&sha256=0&staged=1"
)


def _slow_client(
    port: int, token: str, stop: threading.Event, answers: list[bytes], tls: bool
) -> None:
    """A pusher with a valid token whose body arrives one byte a second: it never ends."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    if tls:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    with sock:
        sock.sendall(
            f"POST {SLOW_CHUNK} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/zstd\r\nContent-Length: 1000\r\n\r\n".encode()
        )
        sock.settimeout(1)
        while not stop.is_set():
            try:
                sock.sendall(b"x")
            except OSError:
                break  # the server gave up on it: what the deployment should do
            try:
                if data := sock.recv(4096):
                    answers.append(data)
                    break
            except TimeoutError:
                continue
            except OSError:
                break


def _answered_while_slow_bodies_trickle(
    port: int, token: str, tls: bool, clients: int
) -> tuple[float, list[bytes]]:
    """Seconds a quick hub request takes while `clients` slow bodies trickle, and what
    the slow ones were answered."""
    stop = threading.Event()
    answers: list[bytes] = []
    threads = [
        threading.Thread(target=_slow_client, args=(port, token, stop, answers, tls), daemon=True)
        for _ in range(clients)
    ]
    for t in threads:
        t.start()
    try:
        time.sleep(1.5 if clients else 0)  # the slow bodies are under way (a second's trickle each)
        started = time.monotonic()
        if tls:
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                "127.0.0.1", port, context=context, timeout=30
            )
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(
                "GET",
                "/api/hub/whoami?namespace=alice@laptop",
                headers={"Authorization": f"Bearer {token}"},
            )
            response = conn.getresponse()
            assert response.status == 200, response.read()
            response.read()
        except TimeoutError:
            return 30.0, answers
        finally:
            conn.close()
        return time.monotonic() - started, answers
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)


def test_slow_bodies_through_the_shipped_nginx_hold_no_worker(
    tmp_path: Path, certificate: tuple[Path, Path]
) -> None:
    """Four pushers trickling their bodies, gunicorn with two threads behind the shipped
    site: nginx holds the bodies until whole, so a quick request is answered at once."""
    nginx = _nginx()
    cert, key = certificate
    env = _env(tmp_path)
    env.update(BRANCHBOARD_WORKERS="1", BRANCHBOARD_THREADS="2")
    token = _push_token(env)
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
    logs = {name: (tmp_path / f"{name}.log").open("wb") for name in ("gunicorn", "nginx")}
    gunicorn = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "branchboard.wsgi",
            "-c",
            str(DEPLOY / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{app_port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=logs["gunicorn"],
    )
    proxy = subprocess.Popen(
        [nginx, "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=logs["nginx"],
    )
    try:
        _wait_for_port(app_port, gunicorn, "gunicorn", tmp_path / "gunicorn.log")
        _wait_for_port(https_port, proxy, "nginx", tmp_path / "nginx.log")
        seconds, _ = _answered_while_slow_bodies_trickle(https_port, token, tls=True, clients=4)
        assert seconds < 5, f"a quick request waited {seconds:.1f} s behind slow bodies"
    finally:
        proxy.terminate()
        gunicorn.terminate()
        proxy.wait(timeout=30)
        gunicorn.wait(timeout=30)
        for log in logs.values():
            log.close()


def test_slow_bodies_to_gunicorn_alone_are_cut_at_the_apps_deadline(tmp_path: Path) -> None:
    """Without nginx in front: the app gives a hub request's body BRANCHBOARD_HUB_BODY_SECONDS,
    then answers 408 and frees its thread."""
    env = _env(tmp_path)
    env.update(BRANCHBOARD_WORKERS="1", BRANCHBOARD_THREADS="2", BRANCHBOARD_HUB_BODY_SECONDS="2")
    token = _push_token(env)
    port = _free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    gunicorn = subprocess.Popen(
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
        stderr=log,
    )
    try:
        _wait_for_port(port, gunicorn, "gunicorn", tmp_path / "gunicorn.log")
        seconds, answers = _answered_while_slow_bodies_trickle(port, token, tls=False, clients=2)
        assert seconds < 5, f"a quick request waited {seconds:.1f} s behind slow bodies"
        assert len(answers) == 2 and all(b" 408 " in a.split(b"\r\n")[0] for a in answers), answers
    finally:
        gunicorn.terminate()
        gunicorn.wait(timeout=30)
        log.close()
