"""The secrets of one instance: the JWT secret (or the embedded dev secret), the Provider
service token, and files only this user may read.

The composition root builds the service with them (``actors/composition/``, which also
makes the API's token verifier from the secret: ``tokens.py``); ``export-center token``
and the runtime's demo token use them too. Nothing here knows the web side.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from actors.core.errors import ConfigError
from actors.plumbing.config import Settings


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by this user only (mode 0600 from the first
    byte: never briefly readable by others under a loose umask).

    Raises:
        OSError: the file could not be written.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    path.chmod(0o600)  # an older file keeps its mode through O_CREAT


def dev_secret_path(settings: Settings) -> Path:
    """Where an embedded instance keeps its dev secret: ``<data_dir>/dev-jwt-secret``."""
    return Path(settings.data_dir) / "dev-jwt-secret"


def resolve_jwt_secret(settings: Settings, *, create: bool = True) -> tuple[str, bool]:
    """The JWT secret, and whether it is the embedded dev secret.

    Without ``FILE_EXPORT_JWT_SECRET`` in embedded mode, a random secret is kept in
    ``<data_dir>/dev-jwt-secret`` (mode 0600) so tokens survive restarts. With the
    RocketMQ transport (production) the variable is required.

    Args:
        settings: the settings.
        create: make the dev secret when there is none yet (the server does). ``False``
            refuses instead: a token signed with a secret no server holds is refused by
            every server (``export-center token`` run from another directory).

    Raises:
        ConfigError: no secret outside embedded mode; no dev secret yet and ``create``
            is false; the data directory cannot be read or written.
    """
    if settings.jwt_secret:
        return settings.jwt_secret, False
    if settings.transport != "embedded":
        raise ConfigError("FILE_EXPORT_JWT_SECRET must be set outside embedded mode")
    path = dev_secret_path(settings)
    if not create and not path.exists():
        raise ConfigError(
            f"no dev secret in {path}: a token signed with a new one would be refused by "
            "the server. Run this where the server keeps its data (the same "
            "FILE_EXPORT_DATA_DIR), or set FILE_EXPORT_JWT_SECRET to the server's secret; "
            "--new-secret makes a dev secret here (a server started later uses it)"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            write_private(path, secrets.token_urlsafe(32))
        return path.read_text().strip(), True
    except OSError as exc:
        raise ConfigError(f"FILE_EXPORT_DATA_DIR ({settings.data_dir}): {exc}") from None


def provider_service_token(settings: Settings) -> str:
    """The ``X-Internal-Service-Token`` every Provider request carries: ``INTERNAL_SERVICE_TOKEN``,
    else (only the built-in demo Provider checks it) a random one.

    Raises:
        ConfigError: no token while ``FILE_EXPORT_PROVIDER_URLS`` names real Providers.
    """
    if settings.internal_service_token:
        return settings.internal_service_token
    if settings.provider_urls:
        raise ConfigError(
            "INTERNAL_SERVICE_TOKEN must be set when FILE_EXPORT_PROVIDER_URLS "
            "names real Providers: every batch request carries it as "
            "X-Internal-Service-Token, and a Provider answers no other token"
        )
    return secrets.token_urlsafe(24)  # only the built-in demo Provider checks it
