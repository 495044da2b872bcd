"""Everything in deploy/ is at least parsed or started by a test."""

from __future__ import annotations

import configparser
import os
import shutil
import socket
import subprocess
import sys
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


@pytest.mark.parametrize("unit", ["branchboard-web.service", "branchboard-importer.service"])
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


def test_nginx_site_is_valid(tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if nginx is None:
        pytest.skip(
            "nginx is not installed (apt-get install nginx-light) so its site cannot be checked"
        )
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
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
