"""The health of the service's components, as one instance sees them.

Four components can fail without taking the service down (docs/design-rules.md
§4.2): the database, the command transport, the export storage and the identity provider
that signs the tokens.
Each actor that watches one writes what it saw here; ``/healthz/details`` and the
``export_transport_up`` gauge read it. ``/healthz`` itself, the load balancer's question,
only asks whether this instance can answer the API: a transport that is down degrades
the service (slower dispatch), it does not make the instance unready.

No IO: a plain record that the watchers update and the readers snapshot.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Component(enum.StrEnum):
    """The components whose health is reported."""

    DATABASE = "database"
    TRANSPORT = "transport"
    STORAGE = "storage"
    #: The identity provider whose keys sign the tokens (``FILE_EXPORT_JWT_JWKS_URL``);
    #: always up when tokens are signed with the shared secret or one PEM key.
    IDENTITY = "identity"


@dataclass(frozen=True, slots=True)
class ComponentHealth:
    """What was last seen of one component.

    Attributes:
        component: which one.
        up: whether it works; ``None`` while nothing has been seen of it yet (a storage
            not probed yet is not known to work: work that needs it waits).
        detail: why it does not work, or (when up) what works only in part; for
            operators.
    """

    component: Component
    up: bool | None
    detail: str = ""

    @property
    def state(self) -> str:
        """``"up"``, ``"down"`` or ``"unknown"`` (not seen yet)."""
        return "unknown" if self.up is None else "up" if self.up else "down"


class HealthBoard:
    """The last health seen of each component; every component starts unknown until its
    watcher reports what it saw (the storage probe, the transport link, the identity
    provider's key reader; the database is asked at each readiness check).
    """

    def __init__(self) -> None:
        self._seen: dict[Component, ComponentHealth] = {
            c: ComponentHealth(c, None) for c in Component
        }

    def report(self, component: Component, up: bool, detail: str = "") -> bool:
        """Record what a watcher saw.

        Args:
            component: the component watched.
            up: whether it works.
            detail: why not; when ``up``, what works only in part ("" when all does).

        Returns:
            Whether ``up`` changed, unknown to known included (the caller logs a change
            once, not every check).
        """
        before = self._seen[component]
        self._seen[component] = ComponentHealth(component, up, detail)
        return before.up != up

    def get(self, component: Component) -> ComponentHealth:
        """What was last seen of ``component``."""
        return self._seen[component]

    def snapshot(self) -> tuple[ComponentHealth, ...]:
        """Every component, in ``Component`` order."""
        return tuple(self._seen[c] for c in Component)


def overall_status(components: tuple[ComponentHealth, ...]) -> str:
    """``"degraded"`` when a component is down, else ``"unknown"`` while one has not been
    seen yet, else ``"ok"``."""
    if any(c.up is False for c in components):
        return "degraded"
    return "unknown" if any(c.up is None for c in components) else "ok"
