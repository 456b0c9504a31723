"""The one way this toolkit runs an external tool (atc, msame, ais_bench).

An argv list, never a shell string; output captured and streamed line by line to the log; a timeout that ends a
hang; and typed errors carrying the tail of the tool's output, so no raw CalledProcessError reaches a user.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from binio.errors import InferError, Terminated

log = logging.getLogger(__name__)
_TAIL_LINES = 20


class ToolError(InferError):
    """An external tool that is missing, hung, or failed."""


@dataclass(frozen=True)
class ToolResult:
    argv: tuple[str, ...]
    returncode: int
    output: str  # stdout and stderr interleaved, as the user would have seen them
    seconds: float

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()

    def tail(self, count: int = _TAIL_LINES) -> str:
        return "\n".join(self.lines[-count:])


def quote_command(argv: Sequence[str]) -> str:
    """The argv as one line a user can paste into a shell."""
    return shlex.join(argv)


def find_tool(name: str, *, extra_dirs: Sequence[Path] = ()) -> Path | None:
    """The executable on PATH, else in `extra_dirs` (e.g. under ASCEND_TOOLKIT_HOME), else None."""
    found = shutil.which(name)
    if found:
        return Path(found)
    for folder in extra_dirs:
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


GRACE_SECONDS = 5.0  # between TERM and KILL when a tool is stopped: time to flush its logs and exit cleanly


def _signal_group(group: int, signum: int) -> bool:
    """Sends `signum` to a process group; False when no process of it is left."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member that changed its user: nothing more this process may do to it
        return False
    return True


def stop_group(process: subprocess.Popen[str], *, grace: float = GRACE_SECONDS) -> None:
    """Stops the tool and every process it started (its process group): TERM, then KILL after `grace` s."""
    stop_groups([process], grace=grace)


def stop_groups(processes: Sequence[subprocess.Popen[str]], *, grace: float = GRACE_SECONDS) -> None:
    """`stop_group` for several tools at once: one grace period for all, not one each."""
    # Started with start_new_session: each leader's pid is its group's id.
    alive = [p for p in processes if _signal_group(p.pid, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if p.poll() is None or _signal_group(p.pid, 0)]
        time.sleep(0.05)
    for process in alive:
        _signal_group(process.pid, signal.SIGKILL)
    for process in processes:
        process.wait()


class _Running:
    """The tools this process is waiting for, by pid, and how many are being started: a stop waits for those to be
    registered, so that a tool forked on one thread as another stops them all is stopped too."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._tools: dict[int, subprocess.Popen[str]] = {}
        self._starting = 0

    @contextlib.contextmanager
    def starting(self, tool: str) -> Iterator[None]:
        """Around a tool's start and its `add`; refuses the start once this thread's stop (`stops_tools_with`) is
        set, so that a stop misses no tool: one that began starting before it is waited for, one after refused."""
        stopped = _STOPPED.get()
        with self._changed:
            if stopped is not None and stopped.is_set():
                raise ToolError(f"{tool}: not started, the run was stopped")
            self._starting += 1
        try:
            yield
        finally:
            with self._changed:
                self._starting -= 1
                self._changed.notify_all()

    def add(self, process: subprocess.Popen[str]) -> None:
        with self._changed:
            self._tools[process.pid] = process

    def remove(self, process: subprocess.Popen[str]) -> None:
        with self._changed:
            self._tools.pop(process.pid, None)

    def all_started(self, *, timeout: float) -> list[subprocess.Popen[str]]:
        """Every tool running, once none is being started (or after `timeout` seconds)."""
        with self._changed:
            self._changed.wait_for(lambda: self._starting == 0, timeout)
            return list(self._tools.values())


_RUNNING = _Running()
_START_SECONDS = 30.0  # how long a stop waits for tools being started: a fork and an exec, milliseconds unless swamped
_STOPPED: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("infer_tools_stopped", default=None)


@contextlib.contextmanager
def stops_tools_with(stopped: threading.Event) -> Iterator[None]:
    """In the body (a shard's work, on a thread of its own), no tool starts once `stopped` is set. Who stops the
    run sets it, then calls `stop_running_tools`: a thread that had not got to its tool yet does not start it."""
    token = _STOPPED.set(stopped)
    try:
        yield
    finally:
        _STOPPED.reset(token)


def stop_running_tools(why: str, *, grace: float = GRACE_SECONDS) -> None:
    """Stops every tool this process is running, from any thread (sharded runs wait for theirs on threads that
    neither Ctrl-C nor SIGTERM reaches), saying which and why."""
    running = _RUNNING.all_started(timeout=_START_SECONDS)
    for process in running:
        log.warning("%s: stopping it and the processes it started (process group %d): %s",
                    Path(str(process.args[0])).name if isinstance(process.args, list) else process.args,
                    process.pid, why)
    stop_groups(running, grace=grace)


def _why_stopped(exc: BaseException) -> str:
    if isinstance(exc, Terminated):
        return "infer was terminated (SIGTERM)"
    if isinstance(exc, KeyboardInterrupt):
        return "infer was interrupted (Ctrl-C)"
    return f"infer stopped on {type(exc).__name__}"


def _start(args: list[str], *, env: Mapping[str, str] | None, cwd: Path | None) -> subprocess.Popen[str]:
    try:
        return subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env), cwd=cwd, text=True, errors="replace", bufsize=1,
            start_new_session=True,  # its own process group, and no Ctrl-C from the terminal: infer stops it
        )
    except FileNotFoundError:
        raise ToolError(f"{args[0]}: executable not found") from None
    except PermissionError:
        raise ToolError(f"{args[0]}: not executable (permission denied)") from None


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)  # delivered in this order: the first one raised unwinds


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Holds Ctrl-C and SIGTERM while the body runs, then delivers them to the handlers they had. Python raises a
    signal's exception at whichever line runs when it lands: one landing after a tool's fork but before the tool is
    registered would unwind with nothing to stop it, and the tool would outlive infer. Signals reach the main
    thread only, and only a handler of Python's can raise there (the default action would end infer at once, the
    tool left running either way), so elsewhere nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: set[int] = set()
    previous = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    holdable = [signum for signum, handler in previous.items() if callable(handler)]
    for signum in holdable:
        signal.signal(signum, lambda signum, frame: held.add(signum))
    try:
        yield
    finally:
        for signum in holdable:
            signal.signal(signum, previous[signum])
        for held_signal in (signum for signum in _STOP_SIGNALS if signum in held):
            signal.raise_signal(held_signal)  # its handler runs here, inside the caller's clean-up


def run_tool(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    grace: float = GRACE_SECONDS,
) -> ToolResult:
    """Runs `argv` to completion; returns its exit code and output, whatever the code (callers judge success).

    The tool runs in a process group of its own, so that on a timeout, Ctrl-C or SIGTERM the processes it started
    (atc's compilers, a stuck device call) are stopped with it: TERM, then KILL after `grace` seconds.
    Raises `ToolError` when the executable cannot be started or does not finish within `timeout` seconds.
    """
    args = [str(a) for a in argv]
    log.info("running: %s", quote_command(args))
    if cwd is not None and not Path(cwd).is_dir():
        raise ToolError(f"{cwd}: working folder for {Path(args[0]).name} does not exist")
    tool = Path(args[0]).name
    lines: list[str] = []
    process: subprocess.Popen[str] | None = None

    def pump() -> None:
        assert process is not None and process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            log.debug("%s: %s", tool, line.rstrip("\n"))

    start = time.monotonic()
    try:
        # A Ctrl-C or SIGTERM as the tool starts lands once it is registered, and so does another thread's stop.
        with _stop_signals_held(), _RUNNING.starting(tool):
            process = _start(args, env=env, cwd=cwd)
            _RUNNING.add(process)
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        assert process is not None
        stop_group(process, grace=grace)
        reader.join(timeout=5)
        tail = "\n".join("".join(lines).splitlines()[-_TAIL_LINES:])
        stopped = (f"{tool}: no result after {timeout:g} s; stopped it and the processes it started (TERM, then "
                   f"KILL after {grace:g} s)")
        raise ToolError(
            f"{stopped}. Last output:\n{tail}" if tail else f"{stopped}; it printed nothing",
            hint="raise --timeout if the model is large, or run the command by hand to see where it hangs",
        ) from None
    except BaseException as exc:  # Ctrl-C, SIGTERM: the tool's group is not the terminal's, so stop it here
        if process is not None:
            log.warning("%s: stopping it and the processes it started (process group %d): %s", tool, process.pid,
                        _why_stopped(exc))
            stop_group(process, grace=grace)
        raise
    finally:
        if process is not None:
            _RUNNING.remove(process)
    reader.join()
    seconds = time.monotonic() - start
    log.info("%s exited %d after %.1f s", tool, returncode, seconds)
    return ToolResult(argv=tuple(args), returncode=returncode, output="".join(lines), seconds=seconds)
