"""What the routes need from the runtime: the ``Dependencies`` the app factory is given.

Its own module so that the app factory (``web.app``) and the routes (``web.api``) both
import it without importing each other. Everything here is a port of the core
(:mod:`actors.core.ports`) or a ``db`` type: the web side knows no actor module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from actors.core.admission import CreateLimits
from actors.core.health import HealthBoard
from actors.core.http.progress import StreamLimits
from actors.core.http.session import CookieSecure
from actors.core.ports.metrics import ApiMetrics
from actors.core.ports.registry import RegistryView
from actors.core.ports.storage import ExportStorage
from actors.core.ports.store import ApiStore
from actors.core.ports.wakeups import PublisherWakeup, RunWakeup
from web.health import DatabaseProbe
from web.identity import TokenVerifier
from web.openid import OpenIdSignIn
from web.progress_feed import ProgressFeed

#: How long a request retries a database fault (a dead pooled connection is replaced at
#: once) before answering 503, seconds.
API_DB_RETRY_SECONDS = 5.0


class _NoRuns:
    """No slots in this process: nothing to wake."""

    def cancelled(self, task_id: int) -> None:
        return None


@dataclass
class Dependencies:
    """What the routes need. ``ready`` is set by the runtime once every actor runs;
    ``stopping`` is set when it starts draining (``/healthz`` then answers 503).

    Attributes:
        store: the service's store; requests use ``api_store``, the same store with its
            retries bounded by ``API_DB_RETRY_SECONDS``.
        storage: where export files are read (download) and deleted (manual retry).
        registry: the export-type registry in force.
        metrics: the metrics requests record and ``/metrics`` serves.
        wakeup: pokes the publisher after a create or retry committed its outbox row.
        jwt_secret: the shared secret: the HS256 key of bearer tokens without an identity
            provider, and the key of the page's CSRF tokens.
        verifier: how tokens are verified (``web/identity.py``); default: HS256 with
            ``jwt_secret``. In use as ``tokens``.
        runs: wakes this process's run of a task just cancelled (a no-op by default,
            for an API without consumer slots).
        create_limits: the active-task limits of a create.
        cookie_secure: when the session cookies get ``Secure``
            (``FILE_EXPORT_COOKIE_SECURE``; ``actors.core.http.session.cookie_secure``).
        progress_poll_seconds: seconds between two reads of the progress feed, which
            serves every progress stream (``FILE_EXPORT_PROGRESS_POLL_SECONDS``).
        progress_stream_limits: progress streams per user and per instance
            (``FILE_EXPORT_PROGRESS_STREAMS_PER_USER``, ``…_PER_INSTANCE``).
        metrics_token: the bearer token ``/metrics`` requires
            (``FILE_EXPORT_METRICS_TOKEN``); ``None``: open.
        health: what the watchers last saw of the transport and the storage
            (``/healthz/details``).
        download_url_seconds: a download answers a redirect to a presigned URL of the
            bucket valid this many seconds (``FILE_EXPORT_DOWNLOAD_MODE=redirect``);
            ``None``: the service streams the file.
        openid: the company's OpenID Provider the page signs people in with
            (``FILE_EXPORT_OIDC_*``, ``web/sign_in.py``); ``None``: the page asks for a
            token.
    """

    store: ApiStore
    storage: ExportStorage
    registry: RegistryView
    metrics: ApiMetrics
    wakeup: PublisherWakeup
    jwt_secret: str
    create_limits: CreateLimits = field(default_factory=CreateLimits)
    runs: RunWakeup = field(default_factory=lambda: _NoRuns())
    cookie_secure: CookieSecure = CookieSecure.AUTO
    progress_poll_seconds: float = 1.0
    metrics_token: str | None = None
    verifier: TokenVerifier | None = None
    progress_stream_limits: StreamLimits = field(default_factory=StreamLimits)
    health: HealthBoard = field(default_factory=HealthBoard)
    download_url_seconds: int | None = None
    openid: OpenIdSignIn | None = None
    ready: trio.Event = field(default_factory=trio.Event)

    def __post_init__(self) -> None:
        #: The store as requests use it: retries bounded by ``API_DB_RETRY_SECONDS``.
        self.api_store = self.store.with_retry_budget(API_DB_RETRY_SECONDS)
        self.db_probe = DatabaseProbe(self.store)
        #: How tokens are verified: ``verifier``, else HS256 with ``jwt_secret``.
        self.tokens = self.verifier or TokenVerifier(secret=self.jwt_secret)
        #: The instance's one reader of task changes for every progress stream.
        self.progress_feed = ProgressFeed(
            self.api_store, self.progress_poll_seconds, self.progress_stream_limits, self.metrics
        )
        self._stopping = False

    @property
    def stopping(self) -> bool:
        """Whether the service drains: ``/healthz`` answers 503 and progress streams end."""
        return self._stopping

    @stopping.setter
    def stopping(self, value: bool) -> None:
        self._stopping = value
        if value:
            self.progress_feed.close()  # every stream ends now, not at its next poll
