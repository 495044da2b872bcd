"""Settings for branchboard: safe local defaults, everything else from the environment."""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from sessions_app.data_folder import data_folder_message, data_folder_private
from sessions_app.formats import agents
from sessions_app.formats.running import PROMPT_LIMIT

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    """Read a yes/no variable; anything unrecognised is an error, not a silent False."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int) -> int:
    """Read an integer variable, failing loudly on garbage."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None


def env_path(name: str, default: Path) -> Path:
    """Read a path variable, expanding ~."""
    value = os.environ.get(name)
    return Path(value).expanduser() if value else default


def env_list(name: str, default: list[str], sep: str = ",") -> list[str]:
    """Read a separated list, dropping empty items."""
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(sep) if item.strip()]


def env_prices(name: str) -> dict[str, dict[str, float]]:
    """Prices per model, as JSON: {"model": {"input": 3, "output": 15, "cache_write": 3.75,
    "cache_read": 0.3}}, dollars per million tokens; a bad value is an error, not a guess."""
    value = os.environ.get(name, "").strip()
    if not value:
        return {}
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not JSON ({exc})") from None
    kinds = {"input", "output", "cache_write", "cache_read", "cache_write_1h"}
    if not isinstance(data, dict):
        raise ImproperlyConfigured(f"{name} must map model names to prices")
    for model, prices in data.items():
        if not isinstance(prices, dict) or not prices or set(prices) - kinds:
            raise ImproperlyConfigured(f"{name}: {model!r} needs prices among {sorted(kinds)}")
        for kind, price in prices.items():
            if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
                raise ImproperlyConfigured(f"{name}: {model!r} {kind} is not a price ({price!r})")
    return data


DATA_DIR = env_path("BRANCHBOARD_DATA_DIR", Path.home() / ".local" / "share" / "branchboard")
# It holds every transcript's text, login sessions and token hashes: the owner's only.
if _changed := data_folder_private(DATA_DIR):
    sys.stderr.write(data_folder_message(DATA_DIR, _changed))

# Session roots: folders holding an agent's `projects/` layout; by default each agent's
# `~/<home folder>/projects` (`~/.claude/projects`, `~/.qwen/projects`), the folders
# older releases used (`~/.qwen/tmp`), and Codex's dated `sessions/` and
# `archived_sessions/` (under `$CODEX_HOME` when set, else `~/.codex`).
SESSION_ROOTS = [
    Path(p).expanduser()
    for p in env_list(
        "BRANCHBOARD_ROOTS",
        [
            str(a.home(os.environ, Path.home()) / folder)
            for a in agents()
            for folder in a.root_folders
        ],
        sep=os.pathsep,
    )
]


def _secret_key() -> str:
    """The key from the environment, else one generated once and kept in the data folder."""
    if key := os.environ.get("BRANCHBOARD_SECRET_KEY"):
        return key
    path = DATA_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    key = secrets.token_urlsafe(50)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race; use its key
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


SECRET_KEY = _secret_key()
DEBUG = env_bool("BRANCHBOARD_DEBUG", False)

# Local mode answers only to loopback names, so a page elsewhere cannot reach it
# through DNS rebinding. Naming other hosts turns on team mode.
# A session written to less than this many seconds ago may still be in use by a
# CLI; rewinding it is refused.
BRANCHBOARD_BUSY_SECONDS = env_int("BRANCHBOARD_BUSY_SECONDS", 5)
# A thread fills the search index behind the import: SQLite's words, in a file of their
# own (services.searching.words), PostgreSQL's pieces of the texts (pieces_filling); off,
# each caller's transaction fills them (the tests).
SEARCH_WORDS_BEHIND = env_bool("BRANCHBOARD_SEARCH_WORDS_BEHIND", True)
# Seconds a request or the importer waits for a database lock another writer
# holds; then the page answers "busy, try again" (sessions_app/middleware.py).
DB_TIMEOUT = env_int("BRANCHBOARD_DB_TIMEOUT", 20)
if DB_TIMEOUT < 1:
    raise ImproperlyConfigured(f"BRANCHBOARD_DB_TIMEOUT={DB_TIMEOUT} must be at least 1 second")
# PostgreSQL: seconds one statement of a page's or the API's read (GET) may run; then
# PostgreSQL cancels it and the page answers 503 (sessions_app.statement_timeout). Never
# the importer's, the commands' or a write's. 0: no limit.
PG_STATEMENT_TIMEOUT = env_int("BRANCHBOARD_PG_STATEMENT_TIMEOUT", 30)
# Requests that read a whole session or search everything (exports, a session's usage per
# turn and its CSV, the search page, /api/search) that one worker process answers at once;
# one more is answered 503 with Retry-After (sessions_app.pages.heavy). Under gunicorn
# the default is one fewer than its threads (deploy/gunicorn.conf.py).
HEAVY_REQUESTS = env_int("BRANCHBOARD_HEAVY_REQUESTS", 1)
if HEAVY_REQUESTS < 1:
    raise ImproperlyConfigured(f"BRANCHBOARD_HEAVY_REQUESTS={HEAVY_REQUESTS} must be at least 1")
# Behind a reverse proxy that sets X-Forwarded-For to the client's address (the
# shipped nginx site does), the audit log takes the address from there; without
# a proxy the header is the client's own say and is ignored.
TRUSTED_PROXY = env_bool("BRANCHBOARD_TRUSTED_PROXY", False)
# The proxy's addresses (or networks): X-Forwarded-For and X-Forwarded-Proto count only
# from a peer among them; from any other they are dropped (ForwardedHeadersMiddleware).
PROXY_ADDRESSES = env_list("BRANCHBOARD_PROXY_ADDRESSES", ["127.0.0.1", "::1"])
for _proxy in PROXY_ADDRESSES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"BRANCHBOARD_PROXY_ADDRESSES: {_proxy!r} is not an address or network"
        ) from None
# The `import_sessions --watch` log (rotated).
IMPORT_LOG = DATA_DIR / "import.log"
# Seconds between two looks of the watcher at every file under the roots; between
# them it imports only the files the file-system events name.
RESCAN_SECONDS = env_int("BRANCHBOARD_RESCAN_SECONDS", 600)
if RESCAN_SECONDS < 1:
    raise ImproperlyConfigured(f"BRANCHBOARD_RESCAN_SECONDS={RESCAN_SECONDS} must be at least 1")

LOCAL_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
EXTRA_HOSTS = env_list("BRANCHBOARD_ALLOWED_HOSTS", [])
ALLOWED_HOSTS = LOCAL_HOSTS + EXTRA_HOSTS
CSRF_TRUSTED_ORIGINS = env_list("BRANCHBOARD_CSRF_TRUSTED_ORIGINS", [])
# Team mode: every page needs a login; writes need the write_sessions permission.
TEAM_MODE = env_bool("BRANCHBOARD_TEAM_MODE", bool(EXTRA_HOSTS))
# Running the agent CLIs from the pages is remote code execution by design: on by
# default only on a local dashboard; a team server needs BRANCHBOARD_ALLOW_RUNS=1,
# and then each user the run_agents permission.
ALLOW_RUNS = env_bool("BRANCHBOARD_ALLOW_RUNS", not TEAM_MODE)
# The command each agent's runs use (a name on PATH or a path); empty: the CLI's name.
RUN_COMMANDS = {
    "claude": os.environ.get("BRANCHBOARD_CLAUDE_COMMAND", ""),
    "qwen": os.environ.get("BRANCHBOARD_QWEN_COMMAND", ""),
    "codex": os.environ.get("BRANCHBOARD_CODEX_COMMAND", ""),
    "gemini": os.environ.get("BRANCHBOARD_GEMINI_COMMAND", ""),
}
# Seconds a stopped run is given after the interrupt before it is terminated (then killed).
RUN_STOP_GRACE = env_int("BRANCHBOARD_RUN_STOP_GRACE", 5)
# Prices per model (dollars per million tokens) where genai-prices' data has none or
# you pay otherwise; see env_prices.
MODEL_PRICES = env_prices("BRANCHBOARD_MODEL_PRICES")
# The archive: a compressed copy of every session file imported, kept in the database,
# so a session outlives its file (services.archive). 0 turns it off.
ARCHIVE = env_bool("BRANCHBOARD_ARCHIVE", True)
# Behind TLS (team server): secure cookies and HSTS.
BEHIND_TLS = env_bool("BRANCHBOARD_TLS", False)
# A team hub (services.hub): the largest session file it takes, and the largest raw
# chunk of one push request (bytes).
HUB_MAX_FILE = env_int("BRANCHBOARD_HUB_MAX_FILE", 8 << 30)
HUB_MAX_CHUNK = env_int("BRANCHBOARD_HUB_MAX_CHUNK", 32 << 20)
# A hub's quota per namespace (user@machine): the bytes its pushed files and its pushes
# under way may hold on the hub, uncompressed. A push past it is refused (413) before
# its chunk is decompressed.
HUB_QUOTA_BYTES = env_int("BRANCHBOARD_HUB_QUOTA_BYTES", 10 << 30)
# How many times its compressed size a pushed chunk or batch (past 1 MiB) may inflate to;
# a zstd bomb is refused (413) on what it announces. 0: no limit.
HUB_MAX_RATIO = env_int("BRANCHBOARD_HUB_MAX_RATIO", 1000)
# Seconds a push that was never committed (its staging file) is kept after its last
# chunk; then the importer's pass removes it, and its bytes leave the quota.
HUB_STAGED_SECONDS = env_int("BRANCHBOARD_HUB_STAGED_SECONDS", 86400)
if HUB_QUOTA_BYTES < 0 or HUB_STAGED_SECONDS < 0 or HUB_MAX_RATIO < 0:
    raise ImproperlyConfigured(
        "BRANCHBOARD_HUB_QUOTA_BYTES, _STAGED_SECONDS and _MAX_RATIO must not be negative"
    )
# Seconds a hub request's body may take to arrive (under gunicorn); then it is answered
# 408 and its thread is free. Behind the shipped nginx the body comes whole from nginx.
HUB_BODY_SECONDS = env_int("BRANCHBOARD_HUB_BODY_SECONDS", 120)
# On a machine: the largest file a pull takes from a hub (bytes), by default the hub's own limit.
HUB_MAX_PULL = env_int("BRANCHBOARD_HUB_MAX_PULL", HUB_MAX_FILE)
# On a machine: the most files, and bytes, one pull writes (the rest wait for the next).
PULL_MAX_FILES = env_int("BRANCHBOARD_PULL_MAX_FILES", 50)
PULL_MAX_BYTES = env_int("BRANCHBOARD_PULL_MAX_BYTES", 1 << 30)
# What this machine pushes to a hub: the projects (their folders, shell patterns) that
# may go, none unless said ("*" for all), and those that never go, whatever else says.
HUB_PROJECTS = env_list("BRANCHBOARD_HUB_PROJECTS", [], sep=os.pathsep)
HUB_EXCLUDE = env_list("BRANCHBOARD_HUB_EXCLUDE", [], sep=os.pathsep)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "sessions_app",
]

MIDDLEWARE = [
    # First: the forwarded headers of a peer that is not the proxy are dropped before
    # anything (the TLS redirect, the hub's HTTPS check, the audit log) reads them.
    "sessions_app.middleware.ForwardedHeadersMiddleware",
    # Then, in local mode, the owner only: another account on the machine, or a peer that
    # is not loopback, gets 403 before any page, search, API or run is reached.
    "sessions_app.middleware.OwnerOnlyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # PostgreSQL: a read's statements bounded in time, before any of them runs.
    "sessions_app.statement_timeout.StatementTimeoutMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Under /api/, an unexpected error is JSON too, never an HTML 500.
    "sessions_app.middleware.ApiErrorMiddleware",
    # Last, so its process_exception sees a view's lock error first.
    "sessions_app.middleware.DatabaseBusyMiddleware",
    # django-axes: a sign-in it refused (too many failures) answered with its page, 429.
    "axes.middleware.AxesMiddleware",
]
# A form without its page's token gets the site's page that says so.
CSRF_FAILURE_VIEW = "sessions_app.pages.errors.csrf_failure"
if TEAM_MODE:
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
        "django.contrib.auth.middleware.LoginRequiredMiddleware",
    )
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# Sign-in throttling (django-axes), for the team's login page and /admin/login/ alike:
# after BRANCHBOARD_LOGIN_FAILURES wrong passwords for one account from one address,
# that account is refused from that address (429, the site's page) for
# BRANCHBOARD_LOGIN_LOCKOUT_MINUTES, even with the right password. By account and address
# together, so no one elsewhere can lock a user out. Every failure is kept where an admin
# sees it (/admin/axes/: access attempts, access failures); deleting an attempt there
# unlocks it, as `manage.py axes_reset_username NAME` does.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: a locked-out sign-in goes no further
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("BRANCHBOARD_LOGIN_FAILURES", 5)
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured(f"BRANCHBOARD_LOGIN_FAILURES={AXES_FAILURE_LIMIT} must be 1 or more")
_lockout_minutes = env_int("BRANCHBOARD_LOGIN_LOCKOUT_MINUTES", 15)
if _lockout_minutes < 1:
    raise ImproperlyConfigured(
        f"BRANCHBOARD_LOGIN_LOCKOUT_MINUTES={_lockout_minutes} must be 1 or more"
    )
AXES_COOLOFF_TIME = timedelta(minutes=_lockout_minutes)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The client's address as the audit log takes it: behind the trusted proxy its
# X-Forwarded-For, else the peer's (ForwardedHeadersMiddleware drops anyone else's header).
AXES_CLIENT_IP_CALLABLE = "sessions_app.services.audit.client_address"
AXES_LOCKOUT_CALLABLE = "sessions_app.pages.errors.locked_out"
AXES_RESET_ON_SUCCESS = True
# A sign-in refused while locked out writes nothing (and does not push the end of the
# lockout further): an attacker who keeps trying cannot grow a row without end.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_ENABLE_ACCESS_FAILURE_LOG = True  # one row per failure, kept (1000 per account at most)

# Transcripts are untrusted: no inline script or style, nothing from elsewhere.
# Images inside transcripts are shown from data: URLs, never fetched.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

ROOT_URLCONF = "branchboard.urls"
WSGI_APPLICATION = "branchboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # PostgreSQL waits for a lock forever by default; wait as long as SQLite does.
        options = DATABASES["default"].setdefault("OPTIONS", {})
        wait = f"-c lock_timeout={DB_TIMEOUT * 1000}"
        options["options"] = f"{options.get('options', '')} {wait}".strip()
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(DATA_DIR / "branchboard.sqlite3"),
            "OPTIONS": {
                # WAL lets the pages read while an import writes; IMMEDIATE makes a
                # writer take the lock up front instead of failing half-way.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": DB_TIMEOUT,
            },
            # A file, not shared-cache memory, so tests see the same locking as
            # the real thing when threads write at once.
            "TEST": {"NAME": str(DATA_DIR / "test-branchboard.sqlite3")},
            # The pages' server keeps it open between a worker thread's requests, as
            # PostgreSQL's (deploy/gunicorn.conf.py): a new connection attaches the words
            # file and starts with a cold page cache (a search's index pages read again).
            # Elsewhere each request, or watcher pass, opens its own, as before.
            "CONN_MAX_AGE": int(os.environ.get("BRANCHBOARD_SQLITE_CONN_MAX_AGE", "0")),
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Local mode serves static files straight from static/; a team server runs
# collectstatic into BRANCHBOARD_STATIC_ROOT.
STATIC_ROOT = os.environ.get("BRANCHBOARD_STATIC_ROOT") or None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SESSION_COOKIE_SAMESITE = "Lax"
if BEHIND_TLS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("BRANCHBOARD_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("BRANCHBOARD_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("BRANCHBOARD_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Joining the browsers' preload list binds every subdomain for months: the
        # owner of the domain decides (BRANCHBOARD_HSTS_PRELOAD=1), not a default.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Requests are small, but for a prompt sent to a run: the limit admits the longest
# prompt the character limit admits, of 4-byte characters form-encoded (%XX x 4: 12
# bytes each), plus the form's other fields. A larger body is a mistake or an attack.
PROMPT_BODY = PROMPT_LIMIT * 12 + 64 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("BRANCHBOARD_MAX_BODY", PROMPT_BODY)
if DATA_UPLOAD_MAX_MEMORY_SIZE < PROMPT_BODY:
    raise ImproperlyConfigured(
        f"BRANCHBOARD_MAX_BODY={DATA_UPLOAD_MAX_MEMORY_SIZE} is too small for a prompt of "
        f"{PROMPT_LIMIT:,} characters, the longest a run accepts: it needs at least "
        f"{PROMPT_BODY} bytes (or leave it unset)"
    )
# The largest image (decoded) a transcript page shows: real screenshots are a few MB.
# The longest line (record) the index, search, usage and pages read whole (bytes). A
# longer one stays whole in its file and the archive, and forks copy it whole; the rest
# read it cut to this size (its strings shortened), and say so.
MAX_RECORD_BYTES = env_int("BRANCHBOARD_MAX_RECORD_BYTES", 16 << 20)
if MAX_RECORD_BYTES < 1 << 16:
    # Below this even an ordinary prompt would be read cut.
    raise ImproperlyConfigured(
        f"BRANCHBOARD_MAX_RECORD_BYTES={MAX_RECORD_BYTES} is too small: at least 65536 bytes"
    )
BRANCHBOARD_MAX_IMAGE_BYTES = env_int("BRANCHBOARD_MAX_IMAGE_BYTES", 20 * 1024 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
