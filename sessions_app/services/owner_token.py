"""The local dashboard's owner token: a random secret in a 0600 file of the data folder.

Only the account that owns the data folder (0700) can read the file, so a request that
carries the token comes from that account (`middleware.OwnerOnlyMiddleware`): the one
way to tell the owner from another account on the same machine, whose connections to
127.0.0.1 look alike. Deleting the file revokes the token; the next use makes a new one.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from ..data_folder import OWNER_TOKEN
from .files import create_exclusive

FILE_NAME = OWNER_TOKEN  # start-up removes it when others could read it (data_folder)
# 256 bits, URL-safe: it travels in the one-click link's query and in a cookie.
TOKEN_BYTES = 32
SHORTEST = 32  # characters; anything shorter in the file was not written by us


class OwnerTokenError(Exception):
    """The token file cannot be trusted (another kind of file, someone else's, readable by
    others); the message says what to do."""


def owner_token_path(folder: Path) -> Path:
    """Where the data folder `folder` keeps its owner token."""
    return folder / FILE_NAME


def _read(path: Path) -> str:
    # Non-blocking: a FIFO put there must not hang the request that opens it.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise OwnerTokenError(f"{path} is not a file of this account: delete it")
        if st.st_mode & 0o077:
            raise OwnerTokenError(
                f"{path} is readable by others, so the token may be known: delete it, "
                "and a new one is made"
            )
        token = os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if len(token) < SHORTEST:
        raise OwnerTokenError(f"{path} holds no token: delete it, and a new one is made")
    return token


def owner_token(*, folder: Path) -> str:
    """The owner's token, made on first use: random, 0600, whole under its name or absent."""
    path = owner_token_path(folder)
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(TOKEN_BYTES)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # Linked only once written, so a reader never sees half a token; of two processes
        # making it at once, the first link wins and the other reads the winner's.
        with create_exclusive(path, mode=0o600) as out:
            out.write(token.encode("ascii"))
    except FileExistsError:
        return _read(path)
    return token


def is_owner_token(offered: str | None, token: str) -> bool:
    """Whether `offered` is the owner's token, compared in constant time."""
    if not offered or not token:
        return False
    return hmac.compare_digest(offered.encode("utf-8", "replace"), token.encode("ascii"))
