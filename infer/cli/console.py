"""Where the CLI writes: plain lines, and rich consoles (tables, bars) made per call, so output follows
sys.stdout/sys.stderr as they are now."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal, TextIO

from binio.steps import OnStep, no_steps

if TYPE_CHECKING:
    from rich.console import Console

# Help is click's plain formatter (it rewraps each docstring paragraph to the terminal, up to 120 columns), not
# typer's rich one: that imports rich's markdown, syntax and traceback modules, about 0.1 s of every --help and
# half of what a command may take to answer. The same setting gives usage errors as click's plain lines.
PLAIN_HELP: Literal[None] = None
HELP_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 120}


def examples(*lines: str) -> str:
    """A command's epilog: real invocations, the last thing its --help prints, after the options (`\b` keeps click
    from rewrapping them into one paragraph). tests/test_help_examples.py runs every one of them."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


def out() -> Console:
    from rich.console import Console  # imported on first output: --help and argument errors never need it

    return Console(file=sys.stdout, soft_wrap=True, highlight=False)


def plain_output() -> bool:
    """Whether stdout gets plain text: a pipe or a file, or NO_COLOR set (https://no-color.org): tables then have no
    box-drawing lines, only columns, so that grep, cut and diff read them."""
    return bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()


def table(title: str, **settings: Any) -> Any:
    """A rich Table with its title at the left, boxed on a terminal and plain columns otherwise (`plain_output`)."""
    from rich import box
    from rich.table import Table

    plain = plain_output()
    return Table(title=title, title_justify="left", box=None if plain else box.HEAVY_HEAD, show_edge=not plain,
                 pad_edge=not plain, **settings)


def err() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, soft_wrap=True, highlight=False)


def _line(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def print_json(document: Any) -> None:
    """Plain JSON on stdout (no colour codes), for scripts."""
    _line(sys.stdout, json.dumps(document, indent=2))


def say(message: str) -> None:
    """One plain line of progress for the user, on stderr so stdout stays clean for --json. -q (logging set to
    errors only) silences it with the warnings."""
    if logging.getLogger().isEnabledFor(logging.WARNING):
        _line(sys.stderr, message)


def warn(message: str) -> None:
    """A warning the command itself gives (not through logging): the same `warning: ...` line as a logged one."""
    say(f"warning: {message}")


class LogLineFormatter(logging.Formatter):
    """Log records as the rest of the CLI's lines: ``warning: ...``, ``error: ...``, ``info: ...`` (a level in
    lower case, as `error:` and `hint:` are); at -vv each line also names its logger, for whoever reads a bug
    report."""

    def __init__(self, *, named: bool) -> None:
        super().__init__()
        self.named = named

    def format(self, record: logging.LogRecord) -> str:
        where = f" [{record.name}]" if self.named else ""
        text = f"{record.levelname.lower()}{where}: {record.getMessage()}"
        if record.exc_info:  # -v's tracebacks of what a stage caught and went past
            text += "\n" + self.formatException(record.exc_info)
        return text


def show(text: str) -> None:
    """One plain line of a command's result on stdout, as written (no markup, no wrapping)."""
    _line(sys.stdout, text)


def tell_error(text: str) -> None:
    """One plain line on stderr, whatever -q says: an error, or why the command stopped."""
    _line(sys.stderr, text)


@contextlib.contextmanager
def steps(command: str) -> Iterator[OnStep]:
    """The steps of a long stage (freeze, convert) as one transient spinner line on a terminal, ``freeze:
    restoring the variables``, gone when the stage ends; off a terminal, or under -q, nothing at all."""
    if not sys.stderr.isatty() or not logging.getLogger().isEnabledFor(logging.WARNING):
        yield no_steps
        return
    from rich.live import Live
    from rich.spinner import Spinner

    spinner = Spinner("dots", f"{command}: starting", style="green")
    with Live(spinner, console=err(), transient=True, refresh_per_second=8) as live:
        def show_step(step: str) -> None:
            spinner.update(text=f"{command}: {step}")
            live.refresh()  # now: a step that ends before the next tick is still seen

        yield show_step


@contextlib.contextmanager
def batch_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A transient progress bar on stderr, given as the callback the library calls with (done, total); None off a
    terminal, where a bar would leave an empty line and rich (about 50 ms to import) is not loaded at all.

    The bar redraws on each call only (no refresh thread), so image workers can still be forked
    (`infer.dump_bin._sources.images`)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=err(),
                  transient=True, auto_refresh=False) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total, refresh=True)
