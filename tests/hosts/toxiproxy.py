"""Toxiproxy, a TCP proxy with a control API, in a link: the only way to add latency here
(this kernel has no ``tc`` queueing disciplines: ``netem`` and ``prio`` are refused).

:func:`toxiproxy` starts one server (``deploy/toxiproxy/install.sh`` builds it) with its
proxies, in a host's namespace or in the root one, and yields a :class:`Toxiproxy` whose
:meth:`~Toxiproxy.add_latency` and :meth:`~Toxiproxy.clear` set a proxy's toxics.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import trio

from tests.hosts.netns import Host

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "deploy" / "toxiproxy" / "install.sh"


def binary() -> str:
    """The Toxiproxy server the test command built (built now if it did not)."""
    done = subprocess.run([str(INSTALL)], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


@dataclass(frozen=True)
class Proxy:
    """One proxied link: ``listen`` (``host:port``) to ``upstream``."""

    name: str
    listen: str
    upstream: str


class Toxiproxy:
    """A running Toxiproxy's control API (``http://<api>/``)."""

    def __init__(self, api: str) -> None:
        self.api = api

    async def add_latency(self, proxy: str, ms: int, jitter_ms: int = 0) -> None:
        """Delay every packet of ``proxy`` by ``ms`` (± ``jitter_ms``), both directions."""
        async with httpx.AsyncClient(base_url=f"http://{self.api}", timeout=5) as client:
            for stream in ("downstream", "upstream"):
                answer = await client.post(
                    f"/proxies/{proxy}/toxics",
                    json={
                        "name": f"latency-{stream}",
                        "type": "latency",
                        "stream": stream,
                        "attributes": {"latency": ms, "jitter": jitter_ms},
                    },
                )
                answer.raise_for_status()

    async def clear(self, proxy: str) -> None:
        """Remove every toxic of ``proxy``."""
        async with httpx.AsyncClient(base_url=f"http://{self.api}", timeout=5) as client:
            toxics = (await client.get(f"/proxies/{proxy}/toxics")).json()
            for toxic in toxics:
                await client.delete(f"/proxies/{proxy}/toxics/{toxic['name']}")


@contextlib.asynccontextmanager
async def toxiproxy(
    proxies: Sequence[Proxy], api: str, host: Host | None = None
) -> AsyncIterator[Toxiproxy]:
    """Run Toxiproxy with ``proxies``, its API on ``api`` (``address:port``), inside
    ``host``'s namespace (the root namespace when ``None``); stop it when the block ends.

    Raises:
        RuntimeError: it did not answer on its API within 15 s (its output is quoted).
    """
    config = [
        {"name": p.name, "listen": p.listen, "upstream": p.upstream, "enabled": True}
        for p in proxies
    ]
    address, port = api.rsplit(":", 1)
    with tempfile.TemporaryDirectory(prefix="ec-toxi-") as folder:
        config_file = Path(folder) / "proxies.json"
        config_file.write_text(json.dumps(config))
        log = Path(folder) / "toxiproxy.log"
        args = [binary(), "-host", address, "-port", port, "-config", str(config_file)]
        if host is not None:
            args = host.exec_args(*args)
        with open(log, "w") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        try:
            await _wait_ready(api, proxies, process, log)
            yield Toxiproxy(api)
        finally:
            process.kill()
            process.wait()


async def _wait_ready(
    api: str, proxies: Sequence[Proxy], process: subprocess.Popen[bytes], log: Path
) -> None:
    with trio.move_on_after(15):
        while process.poll() is None:
            try:
                async with httpx.AsyncClient(timeout=1) as client:
                    answer = await client.get(f"http://{api}/proxies")
                if answer.status_code == 200 and len(answer.json()) == len(proxies):
                    return
            except httpx.HTTPError:
                pass
            await trio.sleep(0.05)
    raise RuntimeError(f"Toxiproxy did not start on {api}: {log.read_text()[-2000:]}")
