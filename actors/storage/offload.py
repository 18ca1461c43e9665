"""How a storage adapter runs its blocking calls off the event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

_T = TypeVar("_T")


class Offload(Protocol):
    """Runs a blocking call off the event loop and returns its result
    (``trio.to_thread.run_sync``; tests pass an inline runner, because trio's autojump
    clock jumps while a worker thread runs, trio issue 456)."""

    def __call__(self, fn: Callable[..., _T], /, *args: Any) -> Awaitable[_T]: ...
