"""The MariaDB/MySQL address of ``FILE_EXPORT_DATABASE_URL``, parsed and checked."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from actors.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class MysqlUrl:
    """Parsed ``mysql://user:password@host:port/db``."""

    host: str
    port: int
    user: str
    password: str
    database: str

    @classmethod
    def parse(cls, url: str) -> MysqlUrl:
        """Raises ConfigError naming FILE_EXPORT_DATABASE_URL when the URL is malformed."""
        parts = urlsplit(url)
        if parts.scheme != "mysql" or not parts.hostname or not parts.path.strip("/"):
            raise ConfigError(
                "FILE_EXPORT_DATABASE_URL must look like mysql://user:password@host:port/database"
            )
        try:
            port = parts.port or 3306
        except ValueError:
            raise ConfigError("FILE_EXPORT_DATABASE_URL has an invalid port") from None
        return cls(
            parts.hostname,
            port,
            unquote(parts.username or ""),
            unquote(parts.password or ""),
            parts.path.strip("/"),
        )
