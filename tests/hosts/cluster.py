"""The service's instances on test hosts, each reaching the infrastructure host across its
own link.

The infrastructure host is the root namespace, where the test command's MariaDB, RocketMQ
broker and S3 server listen on 127.0.0.1. A Toxiproxy there (:func:`infrastructure`)
relays the bridge's address to them; on each host a Toxiproxy relays the same ports of
the host's own loopback to the bridge — so an instance is configured exactly as on one
machine (``127.0.0.1:3307``, ``127.0.0.1:9876``; the broker even advertises
``127.0.0.1:10911`` and is reached), while every byte of its traffic crosses its veth,
where :class:`~tests.hosts.firewall.Links` cuts it and the host's Toxiproxy delays it.

:class:`Instance` is ``python -m actors`` run inside a host's namespace, its HTTP on the
host's address (the test reaches it across the bridge), its log in a file.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import trio

from tests.helpers import MYSQL_TEST_URL
from tests.hosts.firewall import Links
from tests.hosts.netns import Host, Network
from tests.hosts.toxiproxy import Proxy, Toxiproxy, toxiproxy
from tests.processes import PROCESS_SECRET
from tests.s3_helpers import S3_TEST_KEY, S3_TEST_SECRET, S3_TEST_URL
from tests.servers import Broker

#: The service port of each instance, on its host's address.
HTTP_PORT = 8080
#: Toxiproxy's control port on each host's address.
PROXY_API_PORT = 8474
#: The broker's ports besides the NameServer's: remoting and its fast channel (port - 2).
BROKER_PORTS = (10911, 10909)


def _port(url: str, default: int) -> int:
    return urlsplit(url).port or default


@dataclass(frozen=True)
class Services:
    """The infrastructure host's ports, by link name."""

    mariadb: int = field(default_factory=lambda: _port(MYSQL_TEST_URL, 3306))
    namesrv: int = 9876
    s3: int = field(default_factory=lambda: _port(S3_TEST_URL, 9380))

    def ports(self) -> dict[str, int]:
        """Every proxied port, by a name for its proxy."""
        return {
            "mariadb": self.mariadb,
            "namesrv": self.namesrv,
            **{f"broker{p}": p for p in BROKER_PORTS},
            "s3": self.s3,
        }

    def all(self) -> tuple[int, ...]:
        """Every port of the infrastructure host an instance uses."""
        return tuple(self.ports().values())

    @property
    def broker(self) -> tuple[int, ...]:
        """The NameServer's port and the broker's."""
        return (self.namesrv, *BROKER_PORTS)


@contextlib.asynccontextmanager
async def infrastructure(network: Network, services: Services) -> AsyncIterator[Toxiproxy]:
    """Relay the bridge's address to the servers on the root namespace's loopback."""
    proxies = [
        Proxy(name, f"{network.gateway}:{port}", f"127.0.0.1:{port}")
        for name, port in services.ports().items()
    ]
    async with toxiproxy(proxies, f"{network.gateway}:{PROXY_API_PORT}") as relay:
        yield relay


@dataclass
class Instance:
    """One instance of the service on a host.

    Attributes:
        host: where it runs.
        links: its host's drop rules (cut, heal, lose).
        proxy: its host's Toxiproxy (latency).
        url: its base URL, on the host's address.
        log: its log file.
    """

    host: Host
    links: Links
    proxy: Toxiproxy
    log: Path
    url: str = ""
    process: subprocess.Popen[bytes] | None = None

    @property
    def instance_id(self) -> str:
        """Its ``FILE_EXPORT_INSTANCE_ID``: the ``lease_owner`` of the tasks it runs."""
        return f"host-{self.host.name}"

    def start(self, env: dict[str, str], data_dir: Path) -> None:
        """Start ``python -m actors`` in the host's namespace."""
        full = {
            **os.environ,
            **env,
            "FILE_EXPORT_DATA_DIR": str(data_dir),
            "FILE_EXPORT_HTTP_BIND": f"{self.host.address}:{HTTP_PORT}",
            "FILE_EXPORT_INSTANCE_ID": self.instance_id,
            "FILE_EXPORT_JWT_SECRET": PROCESS_SECRET,
        }
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self.host.exec_args(sys.executable, "-m", "actors"),
                env=full,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=out,
                cwd=Path(__file__).resolve().parents[2],
            )

    async def ready(self, timeout: float = 60) -> None:
        """Wait for its "ready" line."""
        ready = re.compile(r"ready at (http://[\d.]+:\d+)")
        with trio.fail_after(timeout):
            while not (m := ready.search(self.log.read_text(errors="replace"))):
                assert self.process is not None and self.process.poll() is None, self.tail()
                await trio.sleep(0.05)
        self.url = m.group(1)

    def tail(self, lines: int = 40) -> str:
        """The end of its log (for failure messages)."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Kill it (SIGKILL) and wait; the test command's view of a host that died."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def instance_env(broker: Broker, bucket: str, **extra: str) -> dict[str, str]:
    """The settings of an instance on a test host: the shared database, broker and bucket
    through its host's relay, short leases and polls so a partition plays out in seconds.
    """
    return {
        "FILE_EXPORT_DATABASE_URL": MYSQL_TEST_URL,
        "FILE_EXPORT_TRANSPORT": "rocketmq",
        "MQ_TOPIC_PREFIX": broker.topic_prefix,
        "ROCKETMQ_NAME_SERVER": broker.name_server,
        "FILE_EXPORT_RECONCILER_ENABLED": "true",
        "FILE_EXPORT_PUBLISHER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_CONCURRENCY": "2",
        # the steady stream is one user's: admission's limits must not refuse it
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "1000",
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": "1000",
        "FILE_EXPORT_TASK_LEASE_SECONDS": "6",
        "FILE_EXPORT_TASK_HEARTBEAT_SECONDS": "1",
        "FILE_EXPORT_RECONCILER_POLL_MS": "500",
        "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
        "FILE_EXPORT_CONSUMER_POLL_MS": "300",
        "FILE_EXPORT_METRICS_SAMPLE_SECONDS": "1",
        "FILE_EXPORT_REDISPATCH_GRACE_SECONDS": "2",
        "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "1",
        "FILE_EXPORT_STORAGE": "s3",
        "FILE_EXPORT_S3_ENDPOINT": S3_TEST_URL,
        "FILE_EXPORT_S3_BUCKET": bucket,
        "FILE_EXPORT_S3_ACCESS_KEY_ID": S3_TEST_KEY,
        "FILE_EXPORT_S3_SECRET_ACCESS_KEY": S3_TEST_SECRET,
        "FILE_EXPORT_S3_PART_SIZE_MB": "5",
        "FILE_EXPORT_DEMO_PROVIDER": "true",
        "FILE_EXPORT_WORKER_NICE": "0",
        "PYTHONFAULTHANDLER": "1",
        **extra,
    }


@contextlib.asynccontextmanager
async def host_relay(host: Host, network: Network, services: Services) -> AsyncIterator[Toxiproxy]:
    """The host's Toxiproxy: its loopback's service ports to the bridge's."""
    proxies = [
        Proxy(name, f"127.0.0.1:{port}", f"{network.gateway}:{port}")
        for name, port in services.ports().items()
    ]
    async with toxiproxy(proxies, f"{host.address}:{PROXY_API_PORT}", host) as relay:
        yield relay


@contextlib.asynccontextmanager
async def instances(
    network: Network,
    services: Services,
    env: dict[str, str],
    folder: Path,
) -> AsyncIterator[dict[str, Instance]]:
    """An instance on every host of ``network``, started and ready; all killed at the end."""
    async with contextlib.AsyncExitStack() as stack:
        running: dict[str, Instance] = {}
        for name, host in network.hosts.items():
            proxy = await stack.enter_async_context(host_relay(host, network, services))
            links = Links(host, network.gateway)
            links.heal()  # an empty table: rules can be added at once
            instance = Instance(host, links, proxy, folder / f"{name}.log")
            stack.callback(instance.stop)
            (folder / f"data-{name}").mkdir(exist_ok=True)
            instance.start(env, folder / f"data-{name}")
            running[name] = instance
        for instance in running.values():
            await instance.ready()
        yield running


def logs(folder: Path) -> Iterator[str]:
    """Every instance log's name and tail (for a failed test's report)."""
    for log in sorted(folder.glob("*.log")):
        yield f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:])
