"""Hosts as network namespaces on one bridge (``ip netns``, veth, a bridge).

:func:`hosts` makes a bridge with the infrastructure host's address in the root namespace
and one namespace per host, each with a veth pair whose far end is on the bridge, its own
address, and its loopback up. No host has a default route: a host reaches the bridge's
subnet and its own loopback, nothing else. Everything is removed when the block ends,
whatever happened in it; names carry a per-session tag (``ec<hex>``) so a run never
touches another's, and :func:`sweep_stale` removes what a killed run left behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

#: Every name the suite makes starts with this (interfaces are at most 15 characters).
PREFIX = "ec"


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command; raise with its error output if it fails and ``check``."""
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


@dataclass(frozen=True)
class Host:
    """One test host.

    Attributes:
        name: its short name (``a``, ``b`` …).
        netns: the namespace's name.
        address: its IPv4 address on the bridge.
    """

    name: str
    netns: str
    address: str

    def exec_args(self, *args: str) -> list[str]:
        """``args`` as a command run inside this host's namespace."""
        return ["ip", "netns", "exec", self.netns, *args]


@dataclass(frozen=True)
class Network:
    """The bridge and its hosts.

    Attributes:
        tag: this session's tag in every name.
        bridge: the bridge interface (root namespace).
        gateway: the infrastructure host's address: the bridge's own, in the root
            namespace, where MariaDB, the broker and the S3 server are reached.
        hosts: the hosts, by short name.
    """

    tag: str
    bridge: str
    gateway: str
    hosts: dict[str, Host]


def _subnet() -> int:
    """A third octet for 10.77.x.0/24 no other run of this machine uses now."""
    used = sh("ip", "-4", "-o", "addr", "show").stdout
    for octet in [*range(10 + os.getpid() % 200, 250), *range(10, 250)]:
        if f" 10.77.{octet}." not in used:
            return octet
    raise RuntimeError("no free 10.77.x.0/24 subnet for the test hosts")


@contextlib.contextmanager
def hosts(names: Sequence[str]) -> Iterator[Network]:
    """Make the bridge and one namespace per name; remove them all when the block ends.

    Raises:
        RuntimeError: a command failed (not root, no ``ip``): nothing is left behind.
    """
    tag = f"{PREFIX}{secrets.token_hex(3)}"
    octet = _subnet()
    bridge = f"{tag}br"
    gateway = f"10.77.{octet}.1"
    made: list[str] = []  # namespaces, removed at the end with everything in them
    try:
        sh("ip", "link", "add", bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{gateway}/24", "dev", bridge)
        sh("ip", "link", "set", bridge, "up")
        network = Network(tag, bridge, gateway, {})
        for i, name in enumerate(names, start=2):
            netns = f"{tag}-{name}"
            outer, inner = f"{tag}{name}0", f"{tag}{name}1"
            sh("ip", "netns", "add", netns)
            made.append(netns)
            sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            sh("ip", "link", "set", inner, "netns", netns)
            sh("ip", "link", "set", outer, "master", bridge, "up")
            address = f"10.77.{octet}.{i}"
            sh("ip", "-n", netns, "addr", "add", f"{address}/24", "dev", inner)
            sh("ip", "-n", netns, "link", "set", inner, "up")
            sh("ip", "-n", netns, "link", "set", "lo", "up")
            network.hosts[name] = Host(name, netns, address)
        yield network
    finally:
        for netns in made:
            _kill_in(netns)
            sh("ip", "netns", "del", netns, check=False)  # its veth end goes with it
        sh("ip", "link", "del", bridge, check=False)


def _kill_in(netns: str) -> None:
    """Kill what still runs in ``netns`` (a test that failed mid-way leaves processes)."""
    pids = sh("ip", "netns", "pids", netns, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)


def sweep_stale() -> list[str]:
    """Remove namespaces and bridges the suite made in a run that was killed (their
    processes gone): names ``ec<hex>-…`` and ``ec<hex>br``. Returns what was removed."""
    removed: list[str] = []
    for line in sh("ip", "netns", "list", check=False).stdout.splitlines():
        netns = line.split()[0] if line.strip() else ""
        if (
            netns.startswith(PREFIX)
            and "-" in netns
            and not sh("ip", "netns", "pids", netns, check=False).stdout.strip()
        ):
            sh("ip", "netns", "del", netns, check=False)
            removed.append(netns)
    for line in sh("ip", "-o", "link", "show", "type", "bridge", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(PREFIX) and name.endswith("br") and "master" not in line:
            ports = sh("ip", "-o", "link", "show", "master", name, check=False).stdout.strip()
            if not ports:
                sh("ip", "link", "del", name, check=False)
                removed.append(name)
    return removed
