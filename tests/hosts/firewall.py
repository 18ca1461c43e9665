"""Cutting and healing a host's links with nftables, inside the host's own namespace.

A host's rules live in one table of its namespace (``inet ec_links``), rebuilt whole at
every change from what :class:`Links` holds: a cut (a port or every port of the
infrastructure host, one direction or both) or a random loss. Packets are dropped, not
refused: a connection across a cut link hangs and times out, as across a failed switch or
a security group that changed — a refused connection would be a kinder fault than any
network gives. The table goes away with the namespace.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Literal

from tests.hosts.netns import Host, sh

Direction = Literal["both", "out", "in"]
TABLE = "ec_links"


@dataclass(frozen=True)
class Rule:
    """One drop rule: traffic between the host and ``peer`` on ``port`` (``None``: every
    port), in ``direction`` (``out``: from the host; ``in``: to it), dropped with
    ``percent`` % probability (100: a cut)."""

    peer: str
    port: int | None
    direction: Direction
    percent: int = 100

    def lines(self) -> list[str]:
        """The nft rule lines, in the output and input chains."""
        loss = "" if self.percent >= 100 else f"numgen random mod 100 < {self.percent} "
        out: list[str] = []
        if self.direction in ("both", "out"):
            port = "" if self.port is None else f"tcp dport {self.port} "
            out.append(f"add rule inet {TABLE} output ip daddr {self.peer} {port}{loss}drop")
        if self.direction in ("both", "in"):
            port = "" if self.port is None else f"tcp sport {self.port} "
            out.append(f"add rule inet {TABLE} input ip saddr {self.peer} {port}{loss}drop")
        return out


@dataclass
class Links:
    """The drop rules in force on one host.

    Args:
        host: the host whose links these are.
        peer: the address the rules name (the infrastructure host).
    """

    host: Host
    peer: str
    rules: list[Rule] = field(default_factory=list)

    def cut(self, *ports: int, direction: Direction = "both") -> None:
        """Drop everything between the host and the peer on ``ports`` (every port when
        none is given), in ``direction``."""
        for port in ports or (None,):
            self.rules.append(Rule(self.peer, port, direction))
        self._apply()

    def lose(self, percent: int, *ports: int) -> None:
        """Drop ``percent`` % of the packets on ``ports`` (both directions), at random."""
        for port in ports or (None,):
            self.rules.append(Rule(self.peer, port, "both", percent))
        self._apply()

    def heal(self) -> None:
        """Remove every rule: the links work again."""
        self.rules.clear()
        self._apply()

    def _apply(self) -> None:
        script = [
            f"table inet {TABLE}",
            f"delete table inet {TABLE}",
            f"add table inet {TABLE}",
            f"add chain inet {TABLE} output {{ type filter hook output priority 0 ; }}",
            f"add chain inet {TABLE} input {{ type filter hook input priority 0 ; }}",
        ]
        for rule in self.rules:
            script += rule.lines()
        done = subprocess.run(
            self.host.exec_args("nft", "-f", "-"),
            input="\n".join(script) + "\n",
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"nft on {self.host.netns} failed: {done.stderr.strip()}")


def listed(host: Host) -> str:
    """The host's ruleset as nft lists it (for messages)."""
    return sh(*host.exec_args("nft", "list", "ruleset"), check=False).stdout
