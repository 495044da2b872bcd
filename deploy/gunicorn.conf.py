"""gunicorn settings for branchboard (`gunicorn -c deploy/gunicorn.conf.py branchboard.wsgi`)."""

from __future__ import annotations

import multiprocessing
import os

bind = os.environ.get("BRANCHBOARD_BIND", "127.0.0.1:8000")
# Forks and imports are I/O bound; two workers per core keeps pages responsive
# while one request streams a large session.
workers = int(os.environ.get("BRANCHBOARD_WORKERS", multiprocessing.cpu_count() * 2 + 1))
threads = int(os.environ.get("BRANCHBOARD_THREADS", "2"))
# A thread waiting on a slow request body is not what `timeout` watches (the gthread
# worker's heartbeat goes on): the shipped nginx site receives push bodies whole first,
# and the app gives a hub request's body BRANCHBOARD_HUB_BODY_SECONDS, then 408.
# A fork of a multi-GB session takes a while; don't kill the worker mid-write.
timeout = int(os.environ.get("BRANCHBOARD_TIMEOUT", "300"))
graceful_timeout = 30
accesslog = os.environ.get("BRANCHBOARD_ACCESS_LOG", "-")
errorlog = "-"
forwarded_allow_ips = os.environ.get("BRANCHBOARD_FORWARDED_ALLOW_IPS", "127.0.0.1")
# Load Django once, in the master, before the workers fork: a worker then answers its
# first request at once instead of importing the app first (`make run`'s first page).
# No connection is opened at load time, so none is shared across the fork.
preload_app = True
# SQLite: each worker thread keeps its connection between requests (settings.py), as
# PostgreSQL's are kept: a search then finds the index's pages in the connection's cache,
# and no request pays for opening the database and attaching its words file.
os.environ.setdefault("BRANCHBOARD_SQLITE_CONN_MAX_AGE", "600")
# The threaded worker accepts a connection while its threads are busy and queues it:
# heavy requests (exports, usage per turn, search) get at most one fewer than a worker's
# threads, so a light page always finds one (sessions_app/pages/heavy.py).
os.environ.setdefault("BRANCHBOARD_HEAVY_REQUESTS", str(max(1, threads - 1)))
# A hub's push pool (deploy/branchboard-hub.service) runs its workers at a lower CPU
# priority, so pages stay quick while machines push: BRANCHBOARD_NICE=10 there.
NICE = int(os.environ.get("BRANCHBOARD_NICE", "0"))


def post_fork(server: object, worker: object) -> None:
    if NICE:
        os.nice(NICE)
