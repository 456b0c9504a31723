"""The runner contract every backend implements, after Polygraphy's BaseRunner.

A runner describes the tensors it takes and returns (`TensorSpec`s, in contract order), is activated once
(sessions built, tools found), answers `infer(feeds)` any number of times with its outputs in contract order, and is
deactivated. Subclasses implement the ``*_impl`` methods; this class checks the feeds, so every backend refuses a
wrong feed with the same message, and times each call.

A runner also says how it takes a whole dataset (`take_dataset`): in process, batch by batch (the default), or,
for an external tool, the dataset's folders in one start (`ToolRunner`). `infer run` asks the runner instead of
testing its type.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, Protocol, TypeVar

import numpy as np

from binio.beside import start_beside
from binio.errors import InferError
from binio.spec import TensorSpec, format_shape

_Runner = TypeVar("_Runner", bound="BaseRunner")
_Done = TypeVar("_Done")
_Done_co = TypeVar("_Done_co", covariant=True)
_Folders_contra = TypeVar("_Folders_contra", contravariant=True)


class RunnerError(InferError):
    """A runner that cannot start, or a feed it cannot take."""


@contextlib.contextmanager
def model_checked_beside(check: Callable[[], None] | None) -> Iterator[None]:
    """Runs `check` (the model file's sha256 against the contract's, 0.7 s a GB) on a thread while the body imports
    the framework and loads the model, and raises what it raised once the body is done: the file is read beside
    work that holds the GIL, and hashed off it. Where both fail, the check's error is the one raised: a model file
    that is not the contract's explains whatever loading it did next."""
    if check is None:
        yield
        return
    checked = start_beside(check, "model-check")
    try:
        yield
    except Exception:
        stale = checked.exception()
        if stale is not None:
            raise stale from None
        raise
    checked.result()


class DatasetFeed(Protocol[_Done_co, _Folders_contra]):
    """The two ways a dataset goes into a runner; the runner picks its own (`BaseRunner.take_dataset`).
    `_Folders_contra` is the runner that takes whole folders: `ToolRunner`, which builds on this module (so this
    module names it only as a parameter: `infer.run._runners.tool.FolderFeed`)."""

    def batch_by_batch(self, runner: BaseRunner) -> _Done_co:
        """In process: one `infer` call per batch."""
        ...

    def whole_folders(self, runner: _Folders_contra) -> _Done_co:
        """To an external tool: every input's folder of bins, in one start of the tool."""
        ...


class BaseRunner(ABC):
    """One model behind one backend. Use it as a context manager, or call activate() and deactivate()."""

    backend: str = ""

    def __init__(self, inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...], *,
                 model_check: Callable[[], None] | None = None) -> None:
        """`model_check` refuses a model file that is not the one its contract describes: asked by
        `check_available`, and by an in-process runner beside its model's load (`model_checked_beside`)."""
        self._inputs = inputs
        self._outputs = outputs
        self.model_check = model_check
        self.is_active = False
        self.last_inference_seconds: float | None = None

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """What `infer` takes, by name."""
        return self._inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """What `infer` returns, in this order (the contract's output order)."""
        return self._outputs

    @property
    def device(self) -> str:
        """Where it computes, in words (``CPUExecutionProvider``, ``msame device 0``); known once active."""
        return ""

    def take_dataset(self, feed: DatasetFeed[_Done, Any]) -> _Done:
        """Hands a whole dataset to this runner the way it takes one: here, batch by batch through `infer` (so any
        runner of whole folders will do: this one never asks for them; `ToolRunner` narrows it to itself)."""
        return feed.batch_by_batch(self)

    def check_available(self) -> None:
        """Refuses a backend that is not there, as far as that can be told without loading the model, and a model
        file that is not its contract's: a sharded run asks before its workers start (each checks the model again).
        An in-process framework is found when a worker activates it."""
        if self.model_check is not None:
            self.model_check()

    def activate(self) -> None:
        if self.is_active:
            return
        self.activate_impl()
        self.is_active = True

    def deactivate(self) -> None:
        if not self.is_active:
            return
        try:
            self.deactivate_impl()
        finally:
            self.is_active = False

    def infer(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs for one batch, in `outputs` order. `feeds` maps every input's tensor name to its array."""
        if not self.is_active:
            raise RunnerError(f"{self.backend} runner: infer() before activate(); use it as a context manager")
        self.check_feeds(feeds)
        start = time.perf_counter()
        results = self.infer_impl(feeds)
        self.last_inference_seconds = time.perf_counter() - start
        return results

    def check_feeds(self, feeds: Mapping[str, np.ndarray]) -> None:
        """Every input fed, nothing else, each with the dtype and shape its spec names."""
        expected = {spec.name for spec in self._inputs}
        unknown = sorted(set(feeds) - expected)
        if unknown:
            raise RunnerError(f"{self.backend} runner: no input named {unknown[0]!r}; inputs are: "
                              f"{', '.join(sorted(expected))}")
        for spec in self._inputs:
            if spec.name not in feeds:
                raise RunnerError(f"{self.backend} runner: input {spec.name} not fed")
            array = feeds[spec.name]
            if np.dtype(array.dtype).newbyteorder("=") != np.dtype(spec.dt.numpy):
                raise RunnerError(f"{self.backend} runner: input {spec.name}: expected {spec.dtype}, "
                                  f"got {array.dtype}")
            if len(array.shape) != len(spec.shape) or any(
                want is not None and want != got for want, got in zip(spec.shape, array.shape, strict=False)
            ):
                raise RunnerError(f"{self.backend} runner: input {spec.name}: expected shape "
                                  f"{format_shape(spec.shape)}, got {format_shape(array.shape)}")

    @abstractmethod
    def activate_impl(self) -> None: ...

    @abstractmethod
    def infer_impl(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]: ...

    def deactivate_impl(self) -> None:  # optional hook: most runners have nothing to release
        return None

    def __enter__(self: _Runner) -> _Runner:
        self.activate()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.deactivate()
