"""A machine's side of the wire to its hub: the login kept in the data folder, and requests.

`hub_login` keeps the hub's address, the namespace and the token in
`<data folder>/hub.json` (0600, written whole or not at all). Requests go over HTTPS,
or plain HTTP to a hub on loopback only, with the token as a bearer token.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import socket
import ssl
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings

from ...session_refs import is_namespace
from ...terminal import shown
from ..files import replace_atomically

LOGIN_FILE = "hub.json"
TIMEOUT = 60.0
# A commit or catch-up indexes a whole file on the hub (the hub's own limit is gunicorn's
# timeout, BRANCHBOARD_TIMEOUT, 300 s by default).
LONG_TIMEOUT = 600.0
# The most bytes of one JSON answer the client reads (a hub's answers are a few KB to a
# few MB: the state of 5000 paths); past it the answer is refused, not read on.
MAX_ANSWER = 16 << 20
# A `pulls` answer lists at most 500 files and 500 held ones (paths of at most 1000).
PULLS_ANSWER = 4 << 20
# The most bytes of a refusal read for its message.
MAX_REFUSAL = 64 << 10


class HubError(Exception):
    """The hub could not be reached, or refused; the message says which and why."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Login:
    url: str  # https://hub.example (no trailing slash)
    namespace: str  # user@machine
    token: str


def login_path() -> Path:
    return Path(settings.DATA_DIR) / LOGIN_FILE


def machine_name() -> str:
    """This machine's name for its namespace: its host name, in the characters allowed."""
    name = socket.gethostname().split(".")[0]
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in name).strip(".-")
    return cleaned[:64] or "machine"


def check_url(url: str) -> str:
    """The hub's base URL; plain HTTP is refused unless the hub is on loopback."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HubError(f"{url!r}: a hub's address is https://host[:port]")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise HubError(
            f"{url}: a hub off this machine is reached over HTTPS only "
            "(the token and your sessions would cross the network in the clear)"
        )
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def login_save(login: Login) -> Path:
    """Keep the login in the data folder, readable by its owner only."""
    path = login_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = orjson.dumps({"url": login.url, "namespace": login.namespace, "token": login.token})
    if path.exists():
        with replace_atomically(path, mode=0o600) as f:
            f.write(data)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fsync(f.fileno())
    return path


def login_load(url: str | None = None) -> Login:
    """The login `hub_login` kept; `url`, when given, must be its hub's."""
    path = login_path()
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise HubError(
            f"not logged in to a hub: run manage.py hub_login {url or 'https://hub.example'}"
        ) from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise HubError(f"{path}: cannot be read ({exc}); run manage.py hub_login again") from None
    if os.stat(path).st_mode & 0o077:
        raise HubError(f"{path} is readable by others: chmod 600 it, or run hub_login again")
    login = Login(
        str(data.get("url", "")), str(data.get("namespace", "")), str(data.get("token", ""))
    )
    if not is_namespace(login.namespace) or not login.token:
        raise HubError(f"{path}: not a hub login; run manage.py hub_login again")
    check_url(login.url)
    if url is not None and check_url(url) != login.url:
        raise HubError(f"logged in to {login.url}, not {url}: run manage.py hub_login {url}")
    return login


class Hub:
    """Requests to one hub, as one namespace."""

    def __init__(self, login: Login) -> None:
        self.login = login
        self.context = ssl.create_default_context(cafile=os.environ.get("BRANCHBOARD_HUB_CA"))
        self._parts = urllib.parse.urlsplit(login.url)
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        """One connection, kept open between requests (a push makes many)."""
        if self._connection is None:
            host, port = self._parts.hostname or "", self._parts.port
            if self._parts.scheme == "https":
                self._connection = http.client.HTTPSConnection(
                    host, port, timeout=TIMEOUT, context=self.context
                )
            else:
                self._connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def call(
        self,
        method: str,
        endpoint: str,
        params: dict[str, Any] | None = None,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = TIMEOUT,
        limit: int = MAX_ANSWER,
    ) -> bytes:
        """The answer to one request, at most `limit` bytes: a longer one is refused
        (by its Content-Length before it is read, else once `limit` bytes came)."""
        query = urllib.parse.urlencode({"namespace": self.login.namespace, **(params or {})})
        target = f"{self._parts.path}/api/hub/{endpoint}?{query}"
        headers = {"Authorization": f"Bearer {self.login.token}"}
        if body is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            try:
                connection = self._connect()
                connection.timeout = timeout
                if connection.sock is not None:
                    connection.sock.settimeout(timeout)
                connection.request(method, target, body=body, headers=headers)
                response = connection.getresponse()
                most = MAX_REFUSAL if response.status >= 400 else limit
                data = self._read(response, endpoint, most)
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                # A kept connection the hub closed meanwhile: once more on a new one (every
                # request is safe to repeat: a chunk is taken only at the offset it names).
                self.close()
                if attempt == 2:
                    raise HubError(f"cannot reach the hub at {self.login.url}: {exc}") from None
            except (http.client.HTTPException, OSError) as exc:
                self.close()
                raise HubError(f"cannot reach the hub at {self.login.url}: {exc}") from None
        if response.will_close:
            self.close()
        if response.status >= 400:
            raise HubError(f"the hub refused: {_said(response.status, data)}", response.status)
        return data

    def _read(self, response: http.client.HTTPResponse, endpoint: str, limit: int) -> bytes:
        """The body of `response`, at most `limit` bytes (a refusal's: its start)."""
        refusal = response.status >= 400
        if response.length is not None and response.length > limit and not refusal:
            self.close()
            raise HubError(self._too_long(endpoint, limit, response.length))
        data = bytearray()
        while len(data) <= limit and (block := response.read(min(1 << 20, limit + 1 - len(data)))):
            data += block
        if len(data) > limit:
            self.close()  # the rest is never read: the connection cannot be used again
            if refusal:
                return bytes(data[:limit])
            raise HubError(self._too_long(endpoint, limit))
        return bytes(data)

    def _too_long(self, endpoint: str, limit: int, said: int | None = None) -> str:
        size = f" ({said:,} bytes)" if said is not None else ""
        return (
            f"the hub's answer to {endpoint}{size} is over the {limit:,} bytes a client "
            f"reads; refused, nothing done with it (is {self.login.url} a hub?)"
        )

    def stream(
        self,
        endpoint: str,
        params: dict[str, Any] | None = None,
        *,
        block: int = 1 << 20,
        limit: int | None = None,
    ) -> Iterator[bytes]:
        """GET `endpoint` and yield its body in blocks as it arrives (never whole in memory),
        at most `limit` bytes of it: more is refused."""
        query = urllib.parse.urlencode({"namespace": self.login.namespace, **(params or {})})
        target = f"{self._parts.path}/api/hub/{endpoint}?{query}"
        self.close()  # a connection of its own: a stream cut short leaves it unusable
        try:
            connection = self._connect()
            connection.request(
                "GET", target, headers={"Authorization": f"Bearer {self.login.token}"}
            )
            response = connection.getresponse()
            if response.status >= 400:
                data = response.read(MAX_REFUSAL)
                raise HubError(f"the hub refused: {_said(response.status, data)}", response.status)
            came = 0
            while data := response.read(block):
                came += len(data)
                if limit is not None and came > limit:
                    raise HubError(self._too_long(endpoint, limit))
                yield data
        except (http.client.HTTPException, OSError) as exc:
            raise HubError(f"cannot reach the hub at {self.login.url}: {exc}") from None
        finally:
            self.close()

    def whoami_user(self) -> str:
        """The user name the token belongs to, as the hub says it."""
        return str(self.json("GET", "whoami", {"who": "1"})["user"])

    def json(
        self, method: str, endpoint: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> Any:
        data = self.call(method, endpoint, params, **kw)
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise HubError(
                f"the hub's answer to {endpoint} is not JSON; is {self.login.url} a hub?"
            ) from None


def _said(status: int, data: bytes) -> str:
    try:
        return shown(orjson.loads(data).get("error") or status)
    except (orjson.JSONDecodeError, AttributeError):
        return f"{status} {http.client.responses.get(status, '')}".strip()
