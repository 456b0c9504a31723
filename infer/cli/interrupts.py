"""Ctrl-C at the command line: said, never lost.

Typer turns a KeyboardInterrupt raised inside a command into a silent ``Exit(130)`` before `infer.cli.app.main`
sees it; each command's callback therefore hands it on as `Interrupted`, which typer lets through, so that main
says ``interrupted`` and what the command kept.

A press that lands while Python runs a finaliser (a weakref callback, ``__del__``: TensorFlow's and rich's run all
through a demo) raises inside it, where Python prints "Exception ignored in ..." and drops it: the command went on
as if no key was pressed (2 presses of 9 during `infer demo`). `delivering_every_press` catches that drop and
delivers the press again, a moment later, where it unwinds the command like any other.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

_AGAIN_AFTER_S = 0.02  # long enough for the finaliser to return before the press is delivered again

# What a command interrupted by Ctrl-C leaves, by command: files are written under a temporary name and renamed
# (binio.atomic), so none is ever half-written; this is what of the work is kept.
KEPT: dict[str, str] = {
    "freeze": "model.pb and model.json are replaced whole or not at all",
    "convert": "the converted model and model.json are replaced whole or not at all",
    "dump-bin": "the .bin files written so far are whole; dump-bin --force again keeps those whose digest matches",
    "run": "the finished batches' outputs are kept, and run.json marks the run incomplete (compare refuses it; "
           "a sharded run --resume goes on from them)",
    "compare": "no report was written; TensorFlow's golden outputs are cached only once complete",
    "tune-precision": "keep_dtype.cfg and tune.json are written only once the search ends: none was",
    "pipeline": "the stages that finished are kept: infer pipeline run again skips them",
    "demo": "the stages that finished are kept: infer demo again skips them",
}
_NOTHING = "nothing was half-written"


class Interrupted(BaseException):
    """Ctrl-C inside a command, carried past typer (not a KeyboardInterrupt, which typer swallows)."""


def interruptible(callback: Callable[..., Any]) -> Callable[..., Any]:
    """`callback` with a KeyboardInterrupt it raises handed on as `Interrupted`."""
    @functools.wraps(callback)
    def invoke(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except KeyboardInterrupt as exc:
            raise Interrupted() from exc

    return invoke


def interrupted_line(command: str | None) -> str:
    """``interrupted (Ctrl-C): <what the command kept>``."""
    return f"interrupted (Ctrl-C): {KEPT.get(command or '', _NOTHING)}"


@contextlib.contextmanager
def delivering_every_press() -> Iterator[None]:
    """While the body runs, a KeyboardInterrupt that Python would drop (raised inside a finaliser) is delivered
    again from a thread, a moment later, unless the body has ended by then; anything else unraisable goes to the
    hook there was, as before."""
    previous = sys.unraisablehook
    running = threading.Event()
    running.set()

    def deliver_again() -> None:
        time.sleep(_AGAIN_AFTER_S)
        if running.is_set() and callable(signal.getsignal(signal.SIGINT)):  # Python still takes Ctrl-C
            os.kill(os.getpid(), signal.SIGINT)

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            threading.Thread(target=deliver_again, name="Ctrl-C again", daemon=True).start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        running.clear()
        sys.unraisablehook = previous
