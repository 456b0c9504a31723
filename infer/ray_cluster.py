"""A Ray cluster as the stages use it (`--engine ray [--address ADDR]`): run's shards and compare's golden
batches and metrics. What both need lives here, so neither reaches into the other's own modules.

Without an address a local Ray instance starts in this process, with one CPU per core this process may use, and
stops when the work is done; with one, the cluster at that address is joined and left running. A session opened
while Ray is already up (a caller that started it, a test's local Ray) leaves it up. Tasks read and write paths
every node must see the same way (a shared file system). Ray is imported only here, on use.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

from binio.errors import InferError

INSTALL_HINT = 'pip install "infer[ray]" (or pip install ".[ray]" in a checkout of infer)'

_P = ParamSpec("_P")
_T = TypeVar("_T")


class RayError(InferError):
    """Ray that cannot be used: not installed, or no cluster at the address given."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayError("--engine ray: Ray is not installed", hint=INSTALL_HINT) from None
    return ray


class RaySession:
    """Ray connected for the life of this object (`close`, or a with block), started only if it was not up."""

    def __init__(self, address: str | None) -> None:
        ray = import_ray()
        self.ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "logging_level": logging.getLogger().getEffectiveLevel()}
            if address is None:
                kwargs["num_cpus"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
            try:
                ray.init(address=address, **kwargs)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise RayError(f"--address {address}: cannot connect to a Ray cluster ({exc})",
                               hint="ray start --head on the head node prints the address") from None
            self._started = True

    def resources(self) -> dict[str, float]:
        return dict(self.ray.cluster_resources())

    def cpus(self) -> int:
        """The cluster's CPUs: how many one-CPU tasks it runs at once."""
        return max(1, int(self.resources().get("CPU", 1)))

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()
        self._started = False

    def __enter__(self) -> RaySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _call(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return function(*args, **kwargs)


class RayTasks(Executor):
    """An executor whose calls are Ray tasks of one CPU each, on the session's cluster. Ray retries nothing
    (max_retries=0): a task that fails raises its error here, as a process pool's would."""

    def __init__(self, session: RaySession, *, cpus_per_task: int = 1) -> None:
        self._remote = session.ray.remote(_call).options(num_cpus=cpus_per_task, max_retries=0)

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        future: Future[_T] = self._remote.remote(fn, args, kwargs).future()
        return future
