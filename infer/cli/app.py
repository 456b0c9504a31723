"""The `infer` command: one typer app composed of one module per command; the only place errors are printed."""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, cast

import typer
import typer.main
from typer.core import TyperGroup

from binio.errors import InferError, Terminated, permission_error
from binio.reading import read_failure
from infer._version import __version__
from infer.cli.console import HELP_SETTINGS, PLAIN_HELP, LogLineFormatter, show, tell_error
from infer.cli.interrupts import Interrupted, delivering_every_press, interrupted_line, interruptible
from infer.cli.quiet import quiet_frameworks
from infer.cli.typed_values import typed_values_pass_through

_VERBOSE_HELP = "-v: what runs; -vv: tool output too. Before or after the command."
_QUIET_HELP = "Only errors on stderr (no progress lines or warnings). Before or after the command."


@dataclass
class _Verbosity:
    """What -v/-vv/-q asked for in this invocation: the root's options reset it, a command's own add to it."""

    verbose: int = 0
    quiet: bool = False

    def apply(self) -> None:
        if self.quiet and self.verbose:
            raise InferError("-q/--quiet and -v/--verbose ask for opposite things: give one of them")
        level = logging.ERROR if self.quiet else logging.WARNING - 10 * min(self.verbose, 2)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(LogLineFormatter(named=self.verbose >= 2))
        logging.basicConfig(level=level, handlers=[handler], force=True)
        quiet_frameworks(self.verbose)


_asked = _Verbosity()


def _more_verbose(value: int) -> None:
    _asked.verbose += value


def _quieter(value: bool) -> None:
    _asked.quiet = _asked.quiet or value


def _verbosity_options(
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, expose_value=False, callback=_more_verbose,
                                help=_VERBOSE_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", expose_value=False, callback=_quieter, help=_QUIET_HELP),
) -> None:
    """Never called: typer turns its parameters into the options every command accepts after its name."""


def _shared_options() -> list[Any]:
    holder = typer.Typer(add_completion=False)
    holder.command()(_verbosity_options)
    return list(typer.main.get_command(holder).params)


_SHARED_OPTIONS = _shared_options()


def _keep_freed_memory() -> None:
    """The heap keeps freed memory for reuse (binio/heap.py): every stage allocates and frees the same large blocks
    over and over (freeze's and convert's copies of the weights, compare's batch temporaries, decoded images), and
    glibc's defaults fault each one in afresh. Set here, for the process, not by the library: a Python caller's own
    allocations are the caller's."""
    # on use: ctypes, which --help does not need
    from binio.heap import ANY_SIZE, keep_freed_memory

    if not keep_freed_memory(largest_block=ANY_SIZE, kept=ANY_SIZE):
        keep_freed_memory()  # an older glibc takes blocks of up to 32 MiB only


def _applying_verbosity(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def invoke(*args: Any, **kwargs: Any) -> Any:
        _asked.apply()  # every -v/-q has been read by now, before the command's name or after it
        _keep_freed_memory()  # a command runs (not its help, nor a usage error)
        return callback(*args, **kwargs)

    return invoke


def _accept_verbosity(command: Any) -> None:
    """Gives `command` (and, for a group, each of its commands) the -v/-q options; a command applies them."""
    command.params.extend(_SHARED_OPTIONS)
    subcommands = getattr(command, "commands", None)
    if subcommands is not None:
        for subcommand in subcommands.values():
            _accept_verbosity(subcommand)
    elif command.callback is not None:
        command.callback = interruptible(_applying_verbosity(command.callback))


class _InferGroup(TyperGroup):
    """The root group: every command under it takes -v/-vv/-q after its name as well as before it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for command in self.commands.values():
            _accept_verbosity(command)


def _show_version(value: bool) -> None:
    if value:
        show(f"infer {__version__}")
        raise typer.Exit()


def _root(
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help=_VERBOSE_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=_QUIET_HELP),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_show_version,
                                 help="Print infer's version and exit."),
) -> None:
    _asked.verbose, _asked.quiet = verbose, quiet


# Command name -> (module, the function or typer app in it, its one-line summary): one module per command, in the
# order the stages run; each command's docstring is its --help. The summary is the docstring's first line, written
# here so the root's help lists every command without importing one (tests/test_cli_conventions.py holds the two
# equal): importing all eleven, and building their flags, cost about a fifth of `infer --help`.
_COMMANDS = {
    "inspect": ("infer.cli.inspect", "inspect",
                "List a model's inputs, its likely outputs (ranked), dynamic dims, op types and parameter count."),
    "freeze": ("infer.cli.freeze", "freeze",
               "Freeze a checkpoint, SavedModel or Keras model into OUTDIR/model.pb + model.json (the contract)."),
    "convert": ("infer.cli.convert", "convert",
                "Convert the frozen pb to an Ascend .om with ATC, or to ONNX for the ONNX Runtime stand-in."),
    "dump-bin": ("infer.cli.dump_bin", "dump_bin",
                 "Write a dataset as .bin files in the dtype the model takes, with dataset.json beside them."),
    "bin-info": ("infer.cli.bin_info", "bin_info",
                 "Show a .bin file or a dataset: shape, dtype, min/max/mean, NaN and inf counts."),
    "run": ("infer.cli.run", "run", "Run every batch of a dataset through the model, in msame's output layout."),
    "compare": ("infer.cli.compare", "compare",
                "Compare the converted model's outputs with TensorFlow's, with the metrics of Ascend's accuracy "
                "tools."),
    "tune-precision": ("infer.cli.tune_precision", "tune_precision",
                       "Find a small set of ops to keep in fp32 so that compare PASSES under an fp16 precision mode."),
    "demo": ("infer.cli.demo", "demo",
             "Run every stage on a built-in example model and image set, and print the verdict."),
    "pipeline": ("infer.cli.pipeline", "pipeline_app",
                 "Every stage from one TOML file; a re-run skips the stages whose inputs have not changed."),
    "doctor": ("infer.cli.doctor", "doctor", "Check this machine: versions, Ascend tools, and what will run for real."),
}


def command_target(name: str) -> Any:
    """The function or typer app of command `name`, its module imported."""
    module, attribute, _ = _COMMANDS[name]
    return getattr(importlib.import_module(module), attribute)


def make_app(only: str | None = None, *, listed: bool = False) -> typer.Typer:
    """The `infer` app with every command, or with the one named `only`: a command being run is the only one
    imported and built (building all eleven cost about 17 ms of each command's start-up). `listed`: every command
    by its summary alone, for the root's help and a mistyped name (click lists and suggests the names)."""
    built = typer.Typer(
        name="infer",
        cls=_InferGroup,
        help="TF1 checkpoint -> frozen pb -> Ascend .om (or an ONNX Runtime stand-in), verified with numbers.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion: bash, zsh, fish, PowerShell
        pretty_exceptions_enable=False,
        rich_markup_mode=PLAIN_HELP,
        context_settings=HELP_SETTINGS,
    )
    built.callback()(_root)
    if listed:
        for name, (_, _, summary) in _COMMANDS.items():
            built.command(name, help=summary, add_help_option=False)(_listed_only)
        return built
    for name in (only,) if only is not None else _COMMANDS:
        target = command_target(name)
        if isinstance(target, typer.Typer):
            built.add_typer(target, name=name)
        else:  # its module's EXAMPLES end its --help
            built.command(name, epilog=getattr(sys.modules[target.__module__], "EXAMPLES", None))(target)
    return built


def _listed_only() -> None:
    """Never called: a command as the root's help lists it (main builds the real one to run it)."""


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole app, for what lists the commands (the docs' tests)
        return make_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _invoked_command(args: Sequence[str]) -> str | None:
    """The command `args` run, if one of infer's: the first word after the root's options (which take no value).
    None for the root's own help (which lists every command, a command named after it or not), and for a mistyped
    name, which the whole app answers with the names it has."""
    for arg in args:
        if arg == "--help" or (arg.startswith("-") and not arg.startswith("--") and "h" in arg[1:]):  # -h, -vh
            return None
        if not arg.startswith("-"):
            return arg if arg in _COMMANDS else None
    return None


def _paths_read_by_the_commands(command: Any) -> Any:
    """Leaves reading a path to the command: click's own readability check prints a usage box, not one line."""
    typed_values_pass_through(command)
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


def _check_not_empty(args: Sequence[str]) -> None:
    """Refuses an empty argument (``--report ''``, ``--soc-version "$UNSET"``): a path would be the current folder,
    a name the default, neither what was typed. Leaving an option out is how its default is asked for."""
    for index, arg in enumerate(args):
        flag, equals, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if equals and not value.strip():
            raise InferError(f"{flag}: an empty value; expected one (leave {flag} out for its default)")
        if not equals and not arg.strip():
            before = args[index - 1] if index > 0 and args[index - 1].startswith("-") else ""
            where = f"{before}: an empty value" if before else f"argument {index + 1} is empty"
            raise InferError(f"{where}; expected one" + (f" (leave {before} out for its default)" if before else ""),
                             hint="an unset shell variable?")


# What click raises for a usage error (an unknown option, a missing argument, a bad value), named through typer's
# public API: typer.BadParameter is click's BadParameter (click vendored as typer's own from 0.29, a dependency
# before), so its bases are click's exceptions whatever typer's version.
_USAGE_ERROR = cast("type[Exception]", next(base for base in typer.BadParameter.__mro__
                                            if base.__name__ == "ClickException"))


def _fail_usage(exc: Any) -> NoReturn:
    """A usage error (an unknown option, a missing argument, a value of the wrong type) in the one-line form of
    every other refusal, instead of click's usage block: ``error: infer convert: No such option: --tagret``."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # `infer` alone: its help, on stderr, as click has it
        exc.show()
        sys.exit(exc.exit_code)
    context = getattr(exc, "ctx", None)
    where = f"{context.command_path}: " if context is not None else ""
    tell_error(f"error: {where}{exc.format_message()}")
    if context is not None:
        tell_error(f"hint: {context.command_path} -h shows what it takes")
    sys.exit(exc.exit_code)


_MOST_SHOWN = 1000  # characters of an error or hint line: a message quoting a file or a name is cut short anyway


def _shown(text: str) -> str:
    """A message with no line longer than `_MOST_SHOWN` characters: the backstop for a message that quotes more of a
    user's name or file than it should. Its lines stay lines: a tool's failure ends with the tail of its log."""
    return "\n".join(line if len(line) <= _MOST_SHOWN else f"{line[:_MOST_SHOWN]}... ({len(line) - _MOST_SHOWN} more "
                     "characters)" for line in text.replace("\r", "\\r").split("\n"))


def _fail(exc: InferError) -> NoReturn:
    tell_error(f"error: {_shown(exc.message)}")
    if exc.hint:
        tell_error(f"hint: {_shown(exc.hint)}")
    sys.exit(exc.exit_code)


_INTERRUPTED = 128 + signal.SIGINT  # the shell's code for a command ended by Ctrl-C
_COMPLETE_VAR = "_INFER_COMPLETE"  # the variable a shell's completion script sets when it asks (click's convention)
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")  # what OpenBLAS reads, in order


def _one_blas_thread() -> None:
    """Asks numpy's OpenBLAS for one thread, unless the user chose a number. Imported with its default, it starts a
    thread per core, which spin a while waiting for work: measured here, 0.14 s of CPU and 30 ms of each process's
    start-up (image workers' too), taken from the command's own threads. infer gives BLAS no work worth threading:
    its metrics sum with einsum, which stays off BLAS on purpose (infer/compare/_judge/metrics.py), and TensorFlow
    and ONNX Runtime have pools of their own. Too late, and left alone, where numpy is loaded already."""
    if "numpy" not in sys.modules and not any(name in os.environ for name in _BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: runs the app; a user's mistake becomes `error: ...` on stderr and a non-zero exit."""
    _one_blas_thread()
    # A crash infer's checks did not foresee (a graph TensorFlow dies on, a signal in a native library) is never a
    # silent death: Python prints the fatal signal and where it came in, on stderr.
    with contextlib.suppress(OSError, ValueError):  # a stderr with no file behind it (a test's capture): none
        faulthandler.enable()
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    args = list(argv) if argv is not None else sys.argv[1:]
    invoked: str | None = None
    try:
        _check_utf8(args)
        _check_not_empty(args)
        invoked = _invoked_command(args)
        completing = _COMPLETE_VAR in os.environ  # the shell asks for completions: every command's flags
        app = make_app(None if completing else invoked, listed=invoked is None and not completing)
        command = _paths_read_by_the_commands(typer.main.get_command(app))
        with delivering_every_press():
            code = command.main(args=args, prog_name="infer", standalone_mode=False)
        if code == _INTERRUPTED:  # Ctrl-C outside a command's own code (its arguments' parsing): typer's Exit(130)
            raise KeyboardInterrupt
        # As click's standalone mode ends: with SystemExit, the code typer.Exit gave (handed back outside it) or 0.
        sys.exit(code if isinstance(code, int) else 0)
    except _USAGE_ERROR as exc:  # a usage error: one line, as every other refusal
        _fail_usage(exc)
    except typer.Abort:
        tell_error("aborted")
        sys.exit(1)
    except InferError as exc:
        _fail(exc)
    except PermissionError as exc:  # a file of the user's this user may not read or write, wherever it was opened
        _fail(permission_error(exc))
    except Exception as exc:
        # What a reader did not turn into a refusal, raised while it read a user's file (binio.reading marks it),
        # or an OSError naming its file (a full disk): one line naming the file. Anything else is a bug.
        failure = read_failure(exc)
        if failure is None:
            raise
        _fail(failure)
    except Terminated:
        tell_error("terminated")
        # Every clean-up ran while the exception unwound (tools stopped, records saved): exit now rather than wait
        # for threads that may still be busy (a shard's thread reading its stopped tool's last output).
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + signal.SIGTERM)
    except (Interrupted, KeyboardInterrupt):
        tell_error(interrupted_line(invoked))
        sys.exit(_INTERRUPTED)
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
