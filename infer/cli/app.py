"""The `infer` command: one typer app composed of one module per command; the only place errors are printed."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

import typer

from binio.errors import InferError, Terminated, permission_error
from infer.cli import bin_info, compare, convert, demo, doctor, dump_bin, freeze, inspect, pipeline, run, tune_precision
from infer.cli.console import err
from infer.cli.quiet import quiet_frameworks

app = typer.Typer(
    name="infer",
    help="TF1 checkpoint -> frozen pb -> Ascend .om (or an ONNX Runtime stand-in), verified with numbers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Markdown joins the lines of a docstring paragraph, so help text rewraps to the terminal's width.
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="-v: what runs; -vv: tool output too."),
) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr, force=True)
    quiet_frameworks(verbose)


# One module per command, in the order the stages run; each command's docstring is its --help.
app.command("inspect")(inspect.inspect)
app.command("freeze")(freeze.freeze)
app.command("convert")(convert.convert)
app.command("dump-bin")(dump_bin.dump_bin)
app.command("bin-info")(bin_info.bin_info)
app.command("run")(run.run)
app.command("compare")(compare.compare)
app.command("tune-precision")(tune_precision.tune_precision)
app.command("demo")(demo.demo)
app.add_typer(pipeline.pipeline_app, name="pipeline")
app.command("doctor")(doctor.doctor)


def _paths_read_by_the_commands(command: Any) -> Any:
    """Leaves reading a path to the command: click's own readability check prints a usage box, not one line."""
    for param in command.params:
        described = getattr(param, "type_descriptor", None)  # typer >= 0.24 checks paths itself
        if described is not None and described.is_path:
            described.parameter_info.readable = False
        elif type(getattr(param, "type", None)).__name__ == "Path":  # older typer: click's Path type
            param.type.readable = False
    for sub in getattr(command, "commands", {}).values():
        _paths_read_by_the_commands(sub)
    return command


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (a batch scheduler, kill, a Ray stop) unwinds like Ctrl-C: tools are stopped, clean-ups run."""
    raise Terminated()


def _check_utf8(args: Sequence[str]) -> None:
    """Refuses an argument that is not valid UTF-8 (a path from another locale): TensorFlow reads it as another
    name (a checkpoint then looks corrupt) and JSON cannot hold it."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            raise InferError(f"{shown}: not valid UTF-8; infer, TensorFlow and the JSON files it writes take UTF-8 "
                             "paths only", hint="rename it, or link to it from a UTF-8 name") from None


def _fail(exc: InferError) -> NoReturn:
    console = err()
    console.print(f"error: {exc.message}", markup=False)
    if exc.hint:
        console.print(f"hint: {exc.hint}", markup=False)
    sys.exit(exc.exit_code)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: runs the app; a user's mistake becomes `error: ...` on stderr and a non-zero exit."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    try:
        _check_utf8(list(argv) if argv is not None else sys.argv[1:])
        command = _paths_read_by_the_commands(typer.main.get_command(app))
        command(args=list(argv) if argv is not None else None, prog_name="infer")
    except InferError as exc:
        _fail(exc)
    except PermissionError as exc:  # a file of the user's this user may not read or write, wherever it was opened
        _fail(permission_error(exc))
    except Terminated:
        err().print("terminated", markup=False)
        # Every clean-up ran while the exception unwound (tools stopped, records saved): exit now rather than wait
        # for threads that may still be busy (a shard's thread reading its stopped tool's last output).
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + signal.SIGTERM)
    except KeyboardInterrupt:
        err().print("interrupted", markup=False)
        sys.exit(130)
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
