"""A real OpenID Provider for the sign-in tests: ``deploy/idp/server.mjs`` (panva's
oidc-provider, OpenID Certified) in a Node.js process of its own on 127.0.0.1, with a
login form, fixed accounts and this service registered as a confidential client.
``deploy/dev test`` installs it (``npm ci --prefix deploy/idp``)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from actors.plumbing.config import Settings
from tests.helpers import make_settings, running_service

IDP = Path(__file__).resolve().parents[1] / "deploy" / "idp" / "server.mjs"
CLIENT_ID = "export-center"
CLIENT_SECRET = "test-client-secret-of-the-export-center-0123"


@dataclass(frozen=True)
class Account:
    """A person the provider knows: what they type, and the claims it vouches for."""

    login: str
    password: str
    user_id: int
    name: str
    tenant_id: int = 1
    app_code: str = "PLATFORM"
    perms: tuple[str, ...] = ("platform:customer:export",)

    def as_config(self) -> dict[str, Any]:
        claims = {
            "name": self.name,
            "tenant_id": str(self.tenant_id),
            "app_code": self.app_code,
            "perms": list(self.perms),
        }
        return {
            "login": self.login,
            "password": self.password,
            "sub": str(self.user_id),
            "claims": claims,
        }


ALICE = Account("alice", "alice-password", 4201, "Alice Admin")
#: Known to the provider, but without the claims this service needs (no tenant).
NOBODY = Account("temp", "temp-password", 4299, "Temp Worker", app_code="UNKNOWN")


@contextlib.asynccontextmanager
async def openid_provider(
    tmp_path: Path,
    service_url: str,
    accounts: Sequence[Account] = (ALICE, NOBODY),
    id_token_seconds: int = 3600,
) -> AsyncIterator[str]:
    """Run the provider until the block ends; yields its issuer URL.

    Args:
        service_url: the service's origin (``http://127.0.0.1:<port>``): its callback and
            its page, where sign-outs come back to, are registered.
        id_token_seconds: the ID token's life (the page's session), seconds.
    """
    config = tmp_path / "idp.json"
    config.write_text(
        json.dumps(
            {
                "port": 0,
                "clients": [
                    {
                        "client_id": CLIENT_ID,
                        "client_secret": CLIENT_SECRET,
                        "redirect_uris": [f"{service_url}/auth/callback"],
                        "post_logout_redirect_uris": [f"{service_url}/"],
                    }
                ],
                "accounts": [a.as_config() for a in accounts],
                "idTokenSeconds": id_token_seconds,
            }
        )
    )
    log = (tmp_path / "idp.log").open("w")
    process = subprocess.Popen(
        ["node", str(IDP), str(config)],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert process.stdout is not None
        with trio.fail_after(30):
            line = await trio.to_thread.run_sync(process.stdout.readline)
        assert line.startswith("ready "), f"{line!r}; see {tmp_path / 'idp.log'}"
        yield line.split()[1]
    finally:
        process.terminate()
        await trio.to_thread.run_sync(process.wait)
        if process.stdout is not None:
            process.stdout.close()
        log.close()


def free_port() -> int:
    """A port free on 127.0.0.1 now (the service's, known before the provider starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def oidc_settings(tmp_path: Path, port: int, issuer: str, **more: Any) -> Settings:
    """The service on ``port``, signing people in at ``issuer`` as the client above."""
    return make_settings(
        tmp_path,
        http_bind=f"127.0.0.1:{port}",
        oidc_issuer=issuer,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret=CLIENT_SECRET,
        oidc_scopes="openid profile export_center",
        oidc_display_name="Test company",
        jwt_jwks_url=f"{issuer}/jwks",
        **more,
    )


@contextlib.asynccontextmanager
async def service_with_provider(
    tmp_path: Path, id_token_seconds: int = 3600
) -> AsyncIterator[tuple[str, str]]:
    """The provider and the whole service signing people in at it, until the block ends;
    yields ``(the service's origin, the provider's issuer)``."""
    port = free_port()
    service = f"http://127.0.0.1:{port}"
    async with openid_provider(tmp_path, service, id_token_seconds=id_token_seconds) as issuer:
        async with running_service(oidc_settings(tmp_path, port, issuer)):
            yield service, issuer
