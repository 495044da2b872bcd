"""Fixtures over the fixture corpus (tests/fixtures), imported once per module where it can be.

Every test client is the local dashboard's owner (`_clients_are_the_owners`); `stranger()`
is another account on the machine.

`imported` is what most tests want: the corpus, idle and imported. The import is made
once per module, inside a transaction that ends with the module (as Django's
`TestCase.setUpTestData` does for a class); each test runs in a savepoint inside it,
and the files it forked, rewound or appended to are put back after it. A transactional
test (threads or processes that read the index) takes `imported_committed` instead.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from pytest_django import DjangoDbBlocker

from .corpus import ALL_ROOTS, FIXTURES, CorpusCopy, make_idle
from .owner import owner_cookie

# The module transactions open now (one at most), with the blocker that lets them reach
# the database; a transactional test ends them first (see pytest_runtest_setup).
_OPEN: list[tuple[transaction.Atomic, DjangoDbBlocker]] = []


def pytest_configure(config: pytest.Config) -> None:
    """Run every test as a newcomer with no git config: a commit without its own identity fails."""
    os.environ.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_COUNT="1",
        GIT_CONFIG_KEY_0="user.useConfigOnly",
        GIT_CONFIG_VALUE_0="true",
    )
    for name in ("EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME"):
        os.environ.pop(name, None)
    os.environ.pop("GIT_COMMITTER_EMAIL", None)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A writable copy of the fixture corpus, not imported, so tests can grow and damage files."""
    target = tmp_path / "corpus"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture
def corpus_roots(corpus: Path) -> list[Path]:
    return [corpus / r for r in ALL_ROOTS]


@pytest.fixture(scope="session")
def corpus_copy(tmp_path_factory: pytest.TempPathFactory) -> CorpusCopy:
    """The one copy of the corpus that `imported` hands out, put back after each test."""
    return CorpusCopy(tmp_path_factory.mktemp("shared"))


@pytest.fixture(scope="module")
def module_transaction(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[None]:
    """A transaction around the rest of the module, rolled back when the module ends.

    Rows written in it (an import made once for the module) are seen by every later test
    of the module; each test's own transaction is a savepoint inside it, so what the test
    writes is undone after it.
    """
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
    _OPEN.append((atomic, django_db_blocker))
    yield
    _end_module_transactions()


def _end_module_transactions() -> None:
    while _OPEN:
        atomic, blocker = _OPEN.pop()
        with blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def _is_transactional(item: pytest.Item) -> bool:
    """Whether pytest-django runs `item` as a TransactionTestCase (its rows are committed)."""
    marker = item.get_closest_marker("django_db")
    if marker and (
        marker.kwargs.get("transaction")
        or marker.kwargs.get("reset_sequences")
        or (marker.args and marker.args[0])
    ):
        return True
    names = getattr(item, "fixturenames", ())
    return "transactional_db" in names or "live_server" in names


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Before a test's fixtures end: the threads of the CLI runs it started end first. A
    run's thread imports its session once the CLI ends, and a test that saw the run end
    would otherwise have its database emptied under that import (on PostgreSQL, a deadlock
    of the import against the teardown's TRUNCATE)."""
    from sessions_app.services.runs import _escalate_later

    for thread in threading.enumerate():
        if thread.name.startswith("run-") and thread is not threading.current_thread():
            thread.join(timeout=60)
            assert not thread.is_alive(), f"{thread.name} did not end within a minute"
        elif isinstance(thread, threading.Timer) and thread.function is _escalate_later:
            # A stopped run's escalation, seconds later: it would look the run up in a
            # later test's database (or one that allows no access), not this one's.
            thread.cancel()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # pytest-django runs the transactional tests last; the module transaction of the
    # last module before them may still be open, and they need the database to themselves.
    if _is_transactional(item):
        _end_module_transactions()


@pytest.fixture(scope="module")
def imported_for_module(
    corpus_copy: CorpusCopy, module_transaction: None, django_db_blocker: DjangoDbBlocker
) -> Path:
    """The corpus imported once, for the tests of one module (see `imported`)."""
    from sessions_app.services.importing import sessions_import

    corpus_copy.restore()
    with django_db_blocker.unblock():
        report = sessions_import(roots=corpus_copy.roots)
    assert not report.errors, report.errors
    return corpus_copy.path


@pytest.fixture
def imported(
    request: pytest.FixtureRequest, imported_for_module: Path, corpus_copy: CorpusCopy, db: None
) -> Iterator[Path]:
    """The fixture corpus, idle and imported; the test may fork, rewind and append at will."""
    if _is_transactional(request.node):
        pytest.fail("a transactional test needs its rows committed: use imported_committed")
    if not _OPEN:
        pytest.fail("the module's transaction ended early: a transactional test ran before")
    yield imported_for_module
    corpus_copy.restore()


@pytest.fixture
def imported_committed(corpus: Path, corpus_roots: list[Path], transactional_db: None) -> Path:
    """The corpus copied and imported for this test alone, committed for other connections."""
    from sessions_app.services.importing import sessions_import

    make_idle(corpus)
    sessions_import(roots=corpus_roots)
    return corpus


@pytest.fixture
def token(db: None) -> str:
    """A bearer token for the JSON API (local mode: it belongs to no user)."""
    from sessions_app.models import ApiToken

    return ApiToken.issue(name="tests")[1]


@pytest.fixture
def team(settings) -> None:
    """Team mode as deployed: login required for every page, permissions checked."""
    settings.TEAM_MODE = True
    settings.ALLOW_RUNS = False  # a team server's default: BRANCHBOARD_ALLOW_RUNS unset
    middleware = list(settings.MIDDLEWARE)
    auth = middleware.index("django.contrib.auth.middleware.AuthenticationMiddleware")
    middleware.insert(auth + 1, "django.contrib.auth.middleware.LoginRequiredMiddleware")
    settings.MIDDLEWARE = middleware
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "team.example"]


@pytest.fixture(scope="session", autouse=True)
def _search_words_inline() -> None:
    """The search index's words filled by each caller's own transaction, not by a thread
    (services.searching.words): the tests' rows are mostly never committed, and a thread's
    connection sees only what is. Set before the first connection attaches the words file;
    tests/test_search_words.py runs the thread."""
    from django.conf import settings
    from django.db import connections

    settings.SEARCH_WORDS_BEHIND = False
    connections.close_all()


@pytest.fixture(autouse=True)
def _clients_are_the_owners(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `django.test.Client` is the owner's, as the one-click link makes a browser: each
    request carries the owner's cookie (the token of the data folder it is made in, which a
    test may change), so the local dashboard's owner check (middleware.OwnerOnlyMiddleware)
    lets it in. `stranger()` is a client without it."""
    send = Client.request

    def as_owner(self: Client, **request: object) -> object:
        if getattr(self, "as_owner", True):
            port = str(request.get("SERVER_PORT") or self.defaults.get("SERVER_PORT", "80"))
            name, value = owner_cookie(port)
            self.cookies[name] = value
        return send(self, **request)

    monkeypatch.setattr(Client, "request", as_owner)


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    """Each test starts with an empty cache: the archive's verdicts are cached per session
    row, and a row's id may come again in another test once the tables are flushed."""
    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _heavy_places_free() -> Iterator[None]:
    """Each test starts with every heavy place free (sessions_app.pages.heavy): a streamed
    answer holds its place until it is closed, which a real server always does and the test
    client does only once the test reads it to its end."""
    from sessions_app.pages import heavy

    heavy._running = 0
    yield
