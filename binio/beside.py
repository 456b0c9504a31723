"""Work started on a thread beside the caller's, whose outcome the caller asks for when it needs it: a check that
reads a whole file (a model's sha256, 0.7 s a GB; every bin's digest) while the command gets on with its own work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

_Result = TypeVar("_Result")


def start_beside(work: Callable[[], _Result], name: str) -> Future[_Result]:
    """Runs `work` on a thread of its own and returns its future. The thread is a daemon: a command stopped by
    Ctrl-C or SIGTERM exits at once, where an executor's thread would be waited for until its file was read to the
    end. Work that writes must not run here: it could be cut off mid-way."""
    future: Future[_Result] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(work())
        except BaseException as exc:  # the caller raises it, when it asks
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
