"""`infer doctor`."""

from __future__ import annotations

import typer

from binio.errors import InferError
from infer.cli.console import examples, print_json, show
from infer.cli.options import takes_options
from infer.remote.options import RemoteOptions

EXAMPLES = examples(
    "infer doctor",
    "infer doctor --json",
)


def _mark(ok: bool | None) -> str:
    return "ok" if ok else "--" if ok is None else "!!"


@takes_options(remote=RemoteOptions)
def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    *,
    remote: RemoteOptions,  # --host and its flags: takes_options
) -> None:
    """Check this machine: versions, Ascend tools, and what will run for real.

    Python, TensorFlow, tf2onnx, onnx, onnxruntime, numpy and xxhash against the ranges we test; atc, msame and
    ais_bench found or not (and their versions); ASCEND_TOOLKIT_HOME, set_env.sh, the devlib entry of
    LD_LIBRARY_PATH; a writable temp folder; the operator tables' date and chips. Ends with which stages run for
    real and which use the stand-in. With --host, the same of an Ascend host over SSH: CANN's env script, atc and
    CANN's version, msame, ais_bench, npu-smi's chips, the working folder's free space, rsync or sftp.
    """
    if remote.host:
        from infer.cli.doctor_host import doctor_host

        doctor_host(remote, as_json=as_json)
        return
    if remote != RemoteOptions():
        raise InferError("--remote-workdir, --env-script and --ssh-option describe a host: give --host too")
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.doctor._doctor import diagnose

    report = diagnose()
    if as_json:
        print_json(report.to_json())
        return
    show(f"infer {report.infer_version}")
    show("python packages")
    in_range = report.python_in_range
    python_range = f" (tested {report.python_range})" if report.python_range else ""
    show(f"  {_mark(in_range)} python       {report.python}{python_range}  [{report.platform}]")
    for package in report.packages:
        version = package.version or "not installed"
        tested = f" (tested {package.tested_range})" if package.tested_range else " (tested range unknown)"
        dist = f" [{package.distribution}]" if package.distribution and package.distribution != package.name else ""
        show(f"  {_mark(package.in_range)} {package.name:<12} {version}{dist}{tested}")
    if report.tested_combination:
        show("  the combination is one we test")
    else:
        outside = [p.name for p in report.packages if not p.in_range]
        if report.python_in_range is False:
            outside.insert(0, "python")
        show(f"  NOT a tested combination: {', '.join(outside)} outside the tested ranges or missing")

    show("ascend tools")
    for tool in report.tools:
        if tool.found:
            version = f" {tool.version}" if tool.version else ""
            show(f"  ok {tool.name:<12} {tool.path}{version}  ({tool.note})")
        else:
            show(f"  -- {tool.name:<12} not found ({tool.note})")

    show("ascend environment")
    # Without ATC none of these matter; with it, each missing one is a likely cause of an ATC failure.
    needed = report.tool("atc").found
    absent = "!!" if needed else "--"
    home = report.toolkit_home or "not set"
    missing_home = " (no such folder)" if report.toolkit_home and not report.toolkit_home_exists else ""
    show(f"  {'ok' if report.toolkit_home_exists else absent} ASCEND_TOOLKIT_HOME     {home}{missing_home}")
    show(f"  {'ok' if report.set_env else absent} set_env.sh              {report.set_env or 'not found'}")
    show(f"  {'ok' if report.devlib else absent} LD_LIBRARY_PATH devlib  {report.devlib or 'no devlib entry'}")
    temp = "writable" if report.temp_writable else f"NOT writable ({report.temp_error})"
    show(f"  {_mark(report.temp_writable)} temp folder             {report.temp_dir} {temp}")

    tables = report.op_tables
    if tables is not None:
        show("operator tables (convert's pre-check and precision plan)")
        if tables.error:
            show(f"  !! {tables.error}")
        else:
            show(f"  ok snapshot of {tables.date}  ({tables.source}; a newer CANN may support more)")
            for family, chips in tables.families:
                show(f"     {family:<11} {', '.join(chips)}")
            if tables.uncovered:
                show(f"  -- no table     {', '.join(tables.uncovered)}")
            show(f"     the stand-in assumes {tables.assumed} without --soc-version")

    show("what will run here")
    for stage in report.stages:
        show(f"  {'real     ' if stage.real else 'stand-in '} {stage.stage:<15} {stage.uses}")
