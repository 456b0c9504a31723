"""The `infer` command: one typer app composed of one module per command; the only place errors are printed."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import typer

from binio.errors import InferError
from infer.cli.console import err

app = typer.Typer(
    name="infer",
    help="TF1 checkpoint -> frozen pb -> Ascend .om (or an ONNX Runtime stand-in), verified with numbers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="-v: what runs; -vv: tool output too."),
) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr, force=True)


# One line per command module; each module holds one command, its docstring is its --help.
from infer.cli import freeze as _freeze  # noqa: E402
from infer.cli import inspect as _inspect  # noqa: E402

app.command("inspect")(_inspect.inspect)
app.command("freeze")(_freeze.freeze)
from infer.cli import convert as _convert  # noqa: E402

app.command("convert")(_convert.convert)
from infer.cli import doctor as _doctor  # noqa: E402

app.command("doctor")(_doctor.doctor)
from infer.cli import demo as _demo  # noqa: E402
from infer.cli import pipeline as _pipeline  # noqa: E402

app.command("demo")(_demo.demo)
app.add_typer(_pipeline.pipeline_app, name="pipeline")
from infer.cli import run as _run  # noqa: E402

app.command("run")(_run.run)
from infer.cli import bin_info as _bin_info  # noqa: E402
from infer.cli import dump_bin as _dump_bin  # noqa: E402

app.command("dump-bin")(_dump_bin.dump_bin)
app.command("bin-info")(_bin_info.bin_info)
from infer.cli import compare as _compare  # noqa: E402

app.command("compare")(_compare.compare)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: runs the app; a user's mistake becomes `error: ...` on stderr and a non-zero exit."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="infer")
    except InferError as exc:
        console = err()
        console.print(f"error: {exc.message}", markup=False)
        if exc.hint:
            console.print(f"hint: {exc.hint}", markup=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err().print("interrupted", markup=False)
        sys.exit(130)
