"""Settings from the environment, with the seed's variable names (§16.3, ops guide): the
:class:`Settings` class, one field a variable, with the rules between them and the values
derived from them.

Every timing is configurable so tests can run in seconds. Durations named ``*_MS`` are
milliseconds; every other duration is seconds (fractions allowed) unless the name says
minutes or days. An invalid value stops start-up with a ``ConfigError`` naming the variable.

A setting's variable is ``FILE_EXPORT_`` and its field's name in capitals
(pydantic-settings' ``env_prefix``); the few that keep another name carry it as an alias
(:data:`ENV_PREFIX`). Reading them is :mod:`actors.plumbing.config_loading`'s
(``load_settings``, and ``environment_variables``, which lists them all); a variable whose
text has a form of its own (comma-separated delays, a JSON object of URLs, ``host:port``)
is read by a function of :mod:`actors.plumbing.config_parsing`.

The three staged switches (reconciler / publisher / consumer) default to on in embedded
mode and to off with the RocketMQ transport, as the operations guide requires for a first
deployment ("三个开关默认均为 false"). The demo Provider defaults to on only for an embedded
instance (SQLite and the embedded transport).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from actors.core.admission import CreateLimits
from actors.core.handback import DEFAULT_MAX_HANDBACKS
from actors.core.http.progress import StreamLimits
from actors.core.http.session import CookieSecure
from actors.core.lease import default_instance_id
from actors.core.ports.storage import ObjectStoreConfig
from actors.plumbing.config_parsing import (
    check_bind,
    check_log_level,
    check_secret,
    parse_algorithms,
    parse_provider_urls,
    parse_schedule,
)

#: Every variable but five is ``FILE_EXPORT_`` + the field's name in capitals. The five
#: keep the design's names: three without the prefix (shared with other services), two
#: where the field is named for the :class:`~actors.core.admission.CreateLimits` it fills.
ENV_PREFIX = "FILE_EXPORT_"


def pid_namespace() -> int | None:
    """Inode number of this process's PID namespace (Linux), ``None`` elsewhere."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


class Settings(BaseSettings):
    """All configuration. Attribute docs give the variable, unit and default."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # -- where things are ---------------------------------------------------------------
    data_dir: Path = Field(Path("./var"))
    """FILE_EXPORT_DATA_DIR: embedded data directory (SQLite file, files, dev secret)."""
    database_url: str | None = None
    """FILE_EXPORT_DATABASE_URL: ``sqlite:///PATH`` or ``mysql://user:pw@host:port/db``;
    default ``sqlite:///<data_dir>/export-center.db``."""
    storage_dir: Path | None = None
    """FILE_EXPORT_STORAGE_DIR: local storage root; default ``<data_dir>/files``."""
    storage: Literal["local", "s3"] = "local"
    """FILE_EXPORT_STORAGE: where export files live: ``local`` (FILE_EXPORT_STORAGE_DIR)
    or ``s3`` (an S3-compatible bucket, the FILE_EXPORT_S3_* settings): what several
    instances on several hosts share (docs/operations.md, "Object storage")."""
    s3_endpoint: str | None = None
    """FILE_EXPORT_S3_ENDPOINT: ``https://host[:port]`` of the object store; unset: AWS S3."""
    s3_bucket: str | None = None
    """FILE_EXPORT_S3_BUCKET: the bucket (it must exist); required with ``s3``."""
    s3_region: str = "us-east-1"
    """FILE_EXPORT_S3_REGION: the signing region."""
    s3_access_key_id: str | None = None
    """FILE_EXPORT_S3_ACCESS_KEY_ID: unset: the SDK's own chain (AWS_* variables, roles)."""
    s3_secret_access_key: SecretStr | None = None
    """FILE_EXPORT_S3_SECRET_ACCESS_KEY: the secret of that key."""
    s3_addressing: Literal["path", "virtual", "auto"] = "path"
    """FILE_EXPORT_S3_ADDRESSING: ``path`` (MinIO, Ceph RGW, SeaweedFS), ``virtual``
    (Aliyun OSS, AWS) or ``auto``."""
    s3_ca_bundle: Path | None = None
    """FILE_EXPORT_S3_CA_BUNDLE: PEM file of the CAs of a private endpoint's certificate."""
    s3_public_endpoint: str | None = None
    """FILE_EXPORT_S3_PUBLIC_ENDPOINT: the object store's address as browsers reach it, for
    presigned download URLs (redirect mode), where it differs from FILE_EXPORT_S3_ENDPOINT;
    unset: the same."""
    s3_part_size_mb: int = Field(8, ge=5, le=512)
    """FILE_EXPORT_S3_PART_SIZE_MB: multipart part size, MiB (5..512); an export worker
    holds about two parts in memory."""
    download_mode: Literal["stream", "redirect"] = "stream"
    """FILE_EXPORT_DOWNLOAD_MODE: ``stream`` (the service sends the file, ranges
    included) or ``redirect`` (a 302 to a presigned URL of the bucket, after the same
    access check; needs FILE_EXPORT_STORAGE=s3 and a bucket browsers can reach)."""
    download_url_seconds: int = Field(300, ge=10, le=604800)
    """FILE_EXPORT_DOWNLOAD_URL_SECONDS: life of a presigned download URL, seconds."""
    transport: Literal["embedded", "rocketmq"] = Field("embedded")
    http_bind: str = Field("127.0.0.1:8080")
    """FILE_EXPORT_HTTP_BIND: ``host:port``; port 0 picks a free port."""
    registry: Path | None = None
    """FILE_EXPORT_REGISTRY: registry YAML; default the packaged demo registry."""
    provider_map: Path | None = None
    """FILE_EXPORT_PROVIDER_MAP: YAML file service → ``url`` (and an optional ``token``,
    else INTERNAL_SERVICE_TOKEN), reloaded without a restart when it changes
    (``actors/core/provider/provider_map.py``); its service names at start are the Provider
    allowlist, which a reload cannot change. Unset: FILE_EXPORT_PROVIDER_URLS (static,
    read once); setting both refuses to start."""
    provider_urls: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)
    """FILE_EXPORT_PROVIDER_URLS: JSON object service → base URL; fixed at start, and the
    set of its keys is the Provider allowlist (§10.3)."""
    demo_provider: bool | None = None
    """FILE_EXPORT_DEMO_PROVIDER: mount the demo ``CUSTOMER_LIST`` Provider as service
    ``demo-service`` at this server's own URL. Default on for an embedded instance (a
    SQLite database and the embedded transport: a try-out on one machine), off otherwise,
    so a production instance serves no demo data unless asked (and the built-in demo
    registry, which names ``demo-service``, then refuses to load: set
    ``FILE_EXPORT_REGISTRY``)."""
    jwt_secret: str | None = None
    # -- an identity provider's tokens (web/identity.py) --------------------------------
    jwt_jwks_url: str | None = None
    """FILE_EXPORT_JWT_JWKS_URL: the identity provider's published keys (JWKS); tokens are
    then verified with the key their ``kid`` names (RS256/ES256), not the shared secret."""
    jwt_public_key_file: Path | None = None
    """FILE_EXPORT_JWT_PUBLIC_KEY_FILE: one PEM public key instead of a JWKS."""
    jwt_algorithms: Annotated[tuple[str, ...], NoDecode] | None = None
    """FILE_EXPORT_JWT_ALGORITHMS: accepted ``alg`` values, comma-separated; default
    HS256, or RS256,ES256 with an identity provider (HS* is refused with one)."""
    jwt_issuer: str | None = None
    """FILE_EXPORT_JWT_ISSUER: the ``iss`` every token must carry, if set."""
    jwt_audience: str | None = None
    """FILE_EXPORT_JWT_AUDIENCE: an ``aud`` every token must carry, if set."""
    jwt_claim_user: str = "sub"
    """FILE_EXPORT_JWT_CLAIM_USER: the claim holding the user id."""
    jwt_claim_tenant: str = "tenant_id"
    """FILE_EXPORT_JWT_CLAIM_TENANT: the claim holding the tenant id."""
    jwt_claim_app: str = "app_code"
    """FILE_EXPORT_JWT_CLAIM_APP: the claim holding the app code (PLATFORM, MERCHANT)."""
    jwt_claim_perms: str = "perms"
    """FILE_EXPORT_JWT_CLAIM_PERMS: the claim holding the permission list."""
    # -- company sign-in for the download center (web/sign_in.py) ------------------------
    oidc_issuer: str | None = None
    """FILE_EXPORT_OIDC_ISSUER: the OpenID Provider people sign in with on the page (its
    ``/.well-known/openid-configuration`` is read); unset, the page asks for a token."""
    oidc_client_id: str | None = None
    """FILE_EXPORT_OIDC_CLIENT_ID: this service's client id at that provider."""
    oidc_client_secret: SecretStr | None = None
    """FILE_EXPORT_OIDC_CLIENT_SECRET: its client secret; unset, a public client (PKCE
    protects the code either way)."""
    oidc_scopes: str = "openid profile"
    """FILE_EXPORT_OIDC_SCOPES: the scopes asked for, space-separated; they must bring the
    identity claims (``FILE_EXPORT_JWT_CLAIM_*``) into the ID token."""
    oidc_redirect_url: str | None = None
    """FILE_EXPORT_OIDC_REDIRECT_URL: the callback registered at the provider; default
    ``<the page's origin>/auth/callback``."""
    oidc_display_name: str | None = None
    """FILE_EXPORT_OIDC_DISPLAY_NAME: the provider's name on the sign-in button ("Sign in
    with Acme SSO"); unset, "your company account"."""
    internal_service_token: str | None = Field(None, validation_alias="INTERNAL_SERVICE_TOKEN")
    instance_id: str = Field(
        default_factory=lambda: default_instance_id(
            socket.gethostname(), os.getpid(), pid_namespace()
        )
    )
    """FILE_EXPORT_INSTANCE_ID: ``lease_owner`` of this process, unique among running
    instances; default ``host:pid/pid-namespace`` (``actors.core.lease``). A restart
    recovers at once the tasks its predecessor was running (same id, or a default id of
    this host whose process is gone) instead of waiting for their leases to expire."""
    log_level: str = Field("INFO")
    log_format: Literal["json", "text"] | None = None
    """FILE_EXPORT_LOG_FORMAT: ``json`` (one JSON object per line, for production) or
    ``text``; unset, text when standard error is a terminal, JSON otherwise."""

    metrics_token: str | None = None
    """FILE_EXPORT_METRICS_TOKEN: the bearer token a scrape of ``/metrics`` must send
    (Prometheus: ``authorization: {credentials: <token>}``); unset, ``/metrics`` is open,
    for a private network only."""
    cookie_secure: CookieSecure = Field(CookieSecure.AUTO)
    """FILE_EXPORT_COOKIE_SECURE: ``auto`` (``Secure`` session cookies when the request is
    https), ``always`` (behind a proxy that terminates TLS) or ``never``."""
    progress_poll_seconds: float = Field(1.0, gt=0, le=60)
    """FILE_EXPORT_PROGRESS_POLL_SECONDS: how often the progress feed reads what changed,
    for every progress stream of the instance at once, seconds (one index range per read;
    at most 60, or the page would show progress too late to be of use)."""
    progress_write_seconds: float = Field(0.5, ge=0, le=60)
    """FILE_EXPORT_PROGRESS_WRITE_SECONDS: least time between two progress writes of one
    run, seconds (a write is made at the first batch boundary after it, and at the end);
    0 writes at every batch boundary. Progress is display only; the page's stream reads
    it every FILE_EXPORT_PROGRESS_POLL_SECONDS."""
    progress_streams_per_user: int = Field(20, ge=1)
    """FILE_EXPORT_PROGRESS_STREAMS_PER_USER: live progress streams one user may hold open
    on an instance (one per open download center page); one more is refused (429) and
    that page polls the list instead."""
    progress_streams_per_instance: int = Field(10_000, ge=1)
    """FILE_EXPORT_PROGRESS_STREAMS_PER_INSTANCE: live progress streams one instance serves
    at most; each costs memory and a connection, not database reads (one feed reads for
    all: web/progress_feed.py)."""

    # -- staged switches (ops guide) ------------------------------------------------------
    reconciler_enabled: bool | None = None
    publisher_enabled: bool | None = None
    consumer_enabled: bool | None = None
    consumer_concurrency: int = Field(4, ge=1, le=64)
    """FILE_EXPORT_CONSUMER_CONCURRENCY: export slots of this instance, the exports it runs
    at once (with RocketMQ also the consumer's native threads); further tasks wait PENDING.
    4 is the design's starting value; docs/operations.md ("Export slots and worker
    priority") says when to raise or lower it."""

    max_active_per_user: int = Field(
        3, ge=1, validation_alias="FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER"
    )
    """FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER: PENDING+RUNNING tasks one user may have (§14)."""
    max_active_per_type: int = Field(
        5, ge=1, validation_alias="FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE"
    )
    """FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE: PENDING+RUNNING tasks per export type (§14)."""
    type_reserved_places: int = Field(1, ge=0)
    """FILE_EXPORT_TYPE_RESERVED_PLACES: free places of an export type's active limit that
    only a user with no active task of that type may take (fair share; 0 = first come,
    first served)."""
    consumer_reserved_slots: int = Field(1, ge=0)
    """FILE_EXPORT_CONSUMER_RESERVED_SLOTS: slots of an instance that one user may never
    fill (fair share; a user always may hold one). 0 lets one user fill every slot."""

    # -- timings (§16.3) ------------------------------------------------------------------
    publisher_poll_ms: int = Field(5000, ge=10)
    publisher_batch_size: int = Field(50, ge=1, le=1000)
    publisher_lease_seconds: float = Field(60, gt=0)
    reconciler_poll_ms: int = Field(30000, ge=10)
    consumer_poll_ms: int = Field(2000, ge=10)
    """FILE_EXPORT_CONSUMER_POLL_MS: how often an instance's idle consumer slots look for
    due tasks in the database on their own, milliseconds (one read per instance and round,
    whatever the number of slots). A create or retry on the same instance wakes them at
    once. This is how exports run while the message bus is down: at the speed of this poll."""
    transport_check_seconds: float = Field(15, gt=0)
    """FILE_EXPORT_TRANSPORT_CHECK_SECONDS: how often the RocketMQ transport's topics are
    checked at the NameServer while it is up, seconds; while it is down the check backs off
    from 1 s doubling up to this period."""
    metrics_sample_seconds: float = Field(15, gt=0)
    """FILE_EXPORT_METRICS_SAMPLE_SECONDS: how often every instance refreshes the queue,
    outbox and storage gauges (whether or not it runs the reconciler)."""
    redispatch_grace_seconds: float = Field(60, ge=0)
    sent_stale_seconds: float = Field(600, gt=0)
    task_lease_seconds: float = Field(300, gt=0)
    task_heartbeat_seconds: float = Field(60, gt=0)
    max_duration_minutes: float = Field(30, gt=0)
    max_file_size_mb: float = Field(50, gt=0)
    retention_days: float = Field(7, gt=0)
    event_retention_days: float = Field(30, gt=0)
    """FILE_EXPORT_EVENT_RETENTION_DAYS: how long a task's history events are kept, days."""
    retry_backoff_seconds: Annotated[tuple[float, ...], NoDecode] = Field((60.0, 900.0))
    """FILE_EXPORT_RETRY_BACKOFF_SECONDS: comma-separated execution retry delays (§9.2)."""
    publish_backoff_seconds: Annotated[tuple[float, ...], NoDecode] = Field(
        (5.0, 15.0, 60.0, 300.0, 900.0)
    )
    """FILE_EXPORT_PUBLISH_BACKOFF_SECONDS: comma-separated send retry delays (§7.4)."""
    shutdown_grace_seconds: float = Field(60, ge=0)
    max_handbacks: int = Field(DEFAULT_MAX_HANDBACKS, ge=0, le=100)
    """FILE_EXPORT_MAX_HANDBACKS: hand-backs in a row (a shutdown, a database fault or a
    watchdog outage ended the run, not the export) whose attempt is not counted; the next
    one in the same row counts as an attempt, so ``max_attempts`` still ends a task that
    deploys or a flapping database keep interrupting (``actors/core/handback.py``). 0
    counts every hand-back."""
    worker_nice: int = Field(10, ge=0, le=19)
    """FILE_EXPORT_WORKER_NICE: added to the nice value of export worker processes, so the
    event-loop process (API, leases) gets the CPU first when every core encodes, while the
    workers keep a share beside other busy programs (at +10, about a tenth of what a
    normal-priority process gets on the same core). Lower values give exports more of a
    busy host at the API's expense: measured on 2 cores (deploy/bench/bench_priority.py),
    the API's p95 during four exports was x1.1-2.0 of idle at +10, x2.8 at +5, x8 at 0."""
    worker_sched_idle: bool = Field(False)
    """FILE_EXPORT_WORKER_SCHED_IDLE: on Linux, export workers also run under the
    ``SCHED_IDLE`` policy: they take a core only when no normal-priority process wants
    it. Off by default: beside a neighbour's busy loops an idle-policy worker gets almost
    no CPU, so every export stalls until its deadline (one 200k export beside two busy
    loops on 2 cores: 1,100-2,600 rows/s, against 7,600-8,300 at nice +10 alone, medians of
    alternated runs). Worth turning on only on a host dedicated to the service, where the
    API's latency during exports matters more than export progress under foreign load
    (the API's p95 during four exports: x0.9-1.8 of idle with it, x1.1-2.0 without, the
    same within the noise of each of three runs on a shared machine)."""
    provider_request_timeout_seconds: float = Field(60, gt=0)
    """FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS: total time for one Provider batch
    request, body included. The 15 s read timeout (§14) only bounds the gap between two
    reads; this bounds the whole answer. Keep it well below the lease."""
    db_retry_seconds: float = Field(30, ge=0)
    """FILE_EXPORT_DB_RETRY_SECONDS: how long a store transition retries a lost or refused
    database connection (a killed connection, a server restart) before its caller sees
    the error; long enough for a MariaDB restart. Settling a run keeps retrying until its
    lease margin regardless."""

    # -- message queue (§6.2) -------------------------------------------------------------
    mq_topic_prefix: str | None = Field(None, validation_alias="MQ_TOPIC_PREFIX")
    rocketmq_name_server: str | None = Field(None, validation_alias="ROCKETMQ_NAME_SERVER")
    max_reconsume_times: int = Field(2, ge=0, le=16)

    # -- a variable's text, read (actors/plumbing/config_parsing.py) --------------------
    _parse_provider_urls = field_validator("provider_urls", mode="before")(parse_provider_urls)
    _parse_algorithms = field_validator("jwt_algorithms", mode="before")(parse_algorithms)
    _parse_schedule = field_validator(
        "retry_backoff_seconds", "publish_backoff_seconds", mode="before"
    )(parse_schedule)
    _check_log_level = field_validator("log_level")(check_log_level)
    _check_secret = field_validator("jwt_secret")(check_secret)
    _check_bind = field_validator("http_bind")(check_bind)

    @field_validator("cookie_secure", mode="before")
    @classmethod
    def _lower_cookie_secure(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower_log_format(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower() or None  # empty: unset (pick by terminal)
        return value

    @model_validator(mode="after")
    def _derive(self) -> Settings:
        default_on = self.transport == "embedded"
        for name in ("reconciler_enabled", "publisher_enabled", "consumer_enabled"):
            if getattr(self, name) is None:
                setattr(self, name, default_on)
        if self.demo_provider is None:
            self.demo_provider = default_on and self.resolved_database_url.startswith("sqlite:")
        if self.transport == "rocketmq":
            if self.mq_topic_prefix is None:
                # §6.2: checked for "is set", an explicit empty string is valid (production)
                raise ValueError("MQ_TOPIC_PREFIX must be set when FILE_EXPORT_TRANSPORT=rocketmq")
            if not self.rocketmq_name_server:
                raise ValueError(
                    "ROCKETMQ_NAME_SERVER must be set when FILE_EXPORT_TRANSPORT=rocketmq"
                )
        if self.provider_map is not None and self.provider_urls:
            raise ValueError(
                "FILE_EXPORT_PROVIDER_MAP and FILE_EXPORT_PROVIDER_URLS are both set: "
                "name the Providers in one place (the map file, which reloads, or the "
                "static environment variable), so no address is silently overridden"
            )
        if self.jwt_jwks_url and self.jwt_public_key_file:
            raise ValueError(
                "FILE_EXPORT_JWT_JWKS_URL and FILE_EXPORT_JWT_PUBLIC_KEY_FILE are both set: "
                "name the identity provider's keys in one place"
            )
        if self.oidc_issuer:
            if not self.oidc_client_id:
                raise ValueError("FILE_EXPORT_OIDC_ISSUER needs FILE_EXPORT_OIDC_CLIENT_ID")
            if not (self.jwt_jwks_url or self.jwt_public_key_file):
                raise ValueError(
                    "FILE_EXPORT_OIDC_ISSUER needs FILE_EXPORT_JWT_JWKS_URL: a page's session "
                    "is the provider's ID token, verified with its keys (the jwks_uri of "
                    f"{self.oidc_issuer.rstrip('/')}/.well-known/openid-configuration)"
                )
            if self.jwt_issuer is None:
                self.jwt_issuer = self.oidc_issuer
        if self.storage == "s3" and not self.s3_bucket:
            raise ValueError("FILE_EXPORT_S3_BUCKET must be set when FILE_EXPORT_STORAGE=s3")
        if self.download_mode == "redirect" and self.storage != "s3":
            raise ValueError(
                "FILE_EXPORT_DOWNLOAD_MODE=redirect needs FILE_EXPORT_STORAGE=s3: a local "
                "directory has no URL to redirect to"
            )
        if self.task_heartbeat_seconds >= self.task_lease_seconds:
            raise ValueError(
                "FILE_EXPORT_TASK_HEARTBEAT_SECONDS must be well below "
                "FILE_EXPORT_TASK_LEASE_SECONDS: the lease is renewed every heartbeat "
                "and must outlast a late renewal (defaults 60 and 300)"
            )
        return self

    # -- derived values -----------------------------------------------------------------
    @property
    def topic_prefix(self) -> str:
        return self.mq_topic_prefix or ""

    @property
    def command_topic(self) -> str:
        return f"{self.topic_prefix}file-export-command-v1"

    @property
    def worker_group(self) -> str:
        return f"{self.topic_prefix}file-export-worker-v1"

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'export-center.db'}"

    @property
    def resolved_storage_dir(self) -> Path:
        return self.storage_dir or self.data_dir / "files"

    @property
    def object_store(self) -> ObjectStoreConfig | None:
        """The bucket's settings when FILE_EXPORT_STORAGE=s3, else ``None``."""
        if self.storage != "s3":
            return None
        assert self.s3_bucket is not None  # checked by the model validator
        secret = self.s3_secret_access_key
        return ObjectStoreConfig(
            bucket=self.s3_bucket,
            endpoint=self.s3_endpoint or None,
            region=self.s3_region,
            access_key_id=self.s3_access_key_id or None,
            secret_access_key=secret.get_secret_value() if secret is not None else None,
            addressing=self.s3_addressing,
            ca_bundle=str(self.s3_ca_bundle) if self.s3_ca_bundle else None,
            part_size=self.s3_part_size_mb * 1024 * 1024,
            public_endpoint=self.s3_public_endpoint or None,
        )

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_size_mb * 1024 * 1024)

    @property
    def create_limits(self) -> CreateLimits:
        """The admission limits a create (API) or a manual retry (CLI) is checked against:
        ``FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER``, ``FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE`` and
        ``FILE_EXPORT_TYPE_RESERVED_PLACES``."""
        return CreateLimits(
            max_active_per_user=self.max_active_per_user,
            max_active_per_type=self.max_active_per_type,
            type_reserved_places=self.type_reserved_places,
        )

    @property
    def progress_stream_limits(self) -> StreamLimits:
        """The progress stream caps (``FILE_EXPORT_PROGRESS_STREAMS_PER_USER``,
        ``FILE_EXPORT_PROGRESS_STREAMS_PER_INSTANCE``)."""
        return StreamLimits(
            per_user=self.progress_streams_per_user,
            per_instance=self.progress_streams_per_instance,
        )

    @property
    def bind_host_port(self) -> tuple[str, int]:
        host, _, port = self.http_bind.rpartition(":")
        return host, int(port)
