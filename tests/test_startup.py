"""`infer --help` answers without importing any heavy framework (docs/architecture.md: the layers and lazy imports)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ckpt2pb.logs import TF_CPP_MIN_LOG_LEVEL
from infer.contract import ModelContract
from tests.models import BuiltModel

HEAVY = ("tensorflow", "onnxruntime", "tf2onnx", "onnx", "matplotlib", "PIL")

PROBE = """
import sys
from infer.cli.app import main
try:
    main(["--help"])
except SystemExit:
    pass
for name in {heavy!r}:
    if name in sys.modules:
        print("imported:", name)
"""


@pytest.mark.slow
def test_help_imports_no_heavy_framework() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True,
                            timeout=120, check=True)
    assert "Usage: infer" in result.stdout
    assert [line for line in result.stdout.splitlines() if line.startswith("imported:")] == []


@pytest.mark.slow
def test_tensorflow_start_up_chatter_stays_off_the_terminal(frozen_small_cnn: ModelContract) -> None:
    """TF prints notices from C++ while it is imported (absl, oneDNN, CPU features); -vv lets them through."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    probe = "import sys; from infer.cli.app import main; main(sys.argv[1:])"
    quiet = subprocess.run([sys.executable, "-c", probe, "inspect", str(frozen_small_cnn.pb_path)],
                           capture_output=True, text=True, timeout=300, env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert "probs:0" in quiet.stdout
    assert quiet.stderr == ""
    loud = subprocess.run([sys.executable, "-c", probe, "-vv", "inspect", str(frozen_small_cnn.pb_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert loud.returncode == 0, loud.stderr
    # What TF's C++ prints at the level infer sets depends on the CPU (the oneDNN notice only where its custom ops
    # are on; an AVX2-only EPYC prints nothing): whatever bare TensorFlow prints there, -vv lets through.
    bare = subprocess.run([sys.executable, "-c", "import tensorflow"], capture_output=True, text=True, timeout=300,
                          env={**env, "TF_CPP_MIN_LOG_LEVEL": TF_CPP_MIN_LOG_LEVEL})
    chatter = [line for line in bare.stderr.splitlines() if "oneDNN" in line or "absl" in line]
    assert all(line.split("] ", 1)[-1] in loud.stderr for line in chatter), (chatter, loud.stderr)


HELP_PROBE = """
import sys
from infer.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("imported:", *sorted(name for name in ("numpy", "tensorflow", "onnxruntime", "PIL", "rich")
                            if name in sys.modules))
"""


@pytest.mark.slow
def test_every_command_help_imports_neither_numpy_nor_rich() -> None:
    """Help is text: no command's --help pays for numpy (about 40 ms, a fifth of the start-up), let alone more, nor
    for rich (click formats help; rich's markdown renderer cost about 0.1 s)."""
    commands = [["--help"], *([name, "--help"] for name in ("inspect", "freeze", "convert", "dump-bin", "bin-info",
                                                            "run", "compare", "demo", "doctor", "pipeline"))]
    for argv in commands:
        result = subprocess.run([sys.executable, "-c", HELP_PROBE, *argv], capture_output=True, text=True,
                                timeout=120, check=True)
        assert "Usage: infer" in result.stdout, argv
        assert result.stdout.splitlines()[-1] == "imported:", argv


def test_the_error_root_imports_no_numpy() -> None:
    """Every CLI module imports binio.errors; binio's other names load on first use, so that costs no numpy."""
    probe = "import sys, binio.errors; print(sorted(m for m in ('numpy',) if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.slow
def test_no_command_help_imports_pydantic() -> None:
    """typer coerces values through pydantic; values click has already typed (the flags that --help parses) pass
    as they are (infer/cli/typed_values.py), so help does not pay for pydantic (about a third of its time)."""
    probe = HELP_PROBE.replace('"PIL")', '"PIL", "pydantic")')
    for argv in (["--help"], ["dump-bin", "--help"], ["run", "-h"], ["pipeline", "run", "--help"]):
        result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120,
                                check=True)
        assert "Usage: infer" in result.stdout, argv
        assert result.stdout.splitlines()[-1] == "imported:", argv


@pytest.mark.slow
def test_a_scripted_dump_imports_no_rich(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    """Off a terminal there is no progress bar and every line is plain, so rich (about 50 ms) is not loaded."""
    argv = ["dump-bin", "-m", str(frozen_small_cnn.path), "-o", f"{tmp_path}/bins", "random:0", "--samples", "2"]
    probe = HELP_PROBE.replace('("numpy", ', "(")  # dump-bin needs numpy, and only numpy of these
    result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120,
                            check=True)
    assert result.stdout.startswith("wrote 1 batch file(s)"), result.stdout
    assert result.stdout.splitlines()[-1] == "imported:", result.stdout


MODULES_PROBE = """
import sys
from infer.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("modules:", *sorted(name for name in sys.modules if name.startswith("infer.cli.")))
"""


@pytest.mark.slow
def test_a_command_imports_and_builds_only_its_own_module() -> None:
    """Each command lives in a module of its own; running one (its help here) does not import the ten others."""
    shared = {"infer.cli.app", "infer.cli.console", "infer.cli.interrupts", "infer.cli.quiet", "infer.cli.typed_values"}
    for argv, own in ((["dump-bin", "--help"], {"infer.cli.dump_bin", "infer.cli.options"}),
                      (["-q", "bin-info", "-h"], {"infer.cli.bin_info", "infer.cli.options"}),
                      (["pipeline", "init", "--help"], {"infer.cli.pipeline"})):
        result = subprocess.run([sys.executable, "-c", MODULES_PROBE, *argv], capture_output=True, text=True,
                                timeout=120, check=True)
        assert "Usage: infer" in result.stdout, argv
        assert set(result.stdout.splitlines()[-1].split()[1:]) - shared == own, argv
    for argv in (["--help", "dump-bin"], ["-vh", "run"]):  # the root's help lists every command
        whole = subprocess.run([sys.executable, "-c", MODULES_PROBE, *argv], capture_output=True, text=True,
                               timeout=120, check=True)
        assert "tune-precision" in whole.stdout, argv


BLAS_PROBE = """
import os, sys
from infer.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
import numpy
print("blas:", os.environ.get("OPENBLAS_NUM_THREADS"), "threads:", len(os.listdir("/proc/self/task")))
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts the process's threads in /proc")
def test_numpy_starts_no_blas_threads_unless_the_user_asks(tmp_path: Path) -> None:
    """numpy's OpenBLAS would start a spinning thread per core: infer asks for one (its own thread), and keeps a
    number the user set."""
    from infer.cli.app import _BLAS_THREADS

    env = {k: v for k, v in os.environ.items() if k not in _BLAS_THREADS}  # any of them set would be kept
    argv = ["dump-bin", "-m", str(tmp_path / "missing.json"), "-o", str(tmp_path / "bins"), "random:0"]
    ours = subprocess.run([sys.executable, "-c", BLAS_PROBE, *argv], capture_output=True, text=True, timeout=120,
                          env=env)
    assert "missing.json: no such model contract" in ours.stderr, ours.stderr
    assert ours.stdout.splitlines()[-1] == "blas: 1 threads: 1", ours.stdout
    theirs = subprocess.run([sys.executable, "-c", BLAS_PROBE, *argv], capture_output=True, text=True, timeout=120,
                            env={**env, "OPENBLAS_NUM_THREADS": "2"})
    assert theirs.stdout.splitlines()[-1].startswith("blas: 2 threads:"), theirs.stdout  # OpenBLAS caps it at the cores


@pytest.mark.slow
def test_the_python_api_keeps_tensorflows_chatter_off_stderr_too(frozen_small_cnn: ModelContract) -> None:
    """The library, used from Python, quiets TensorFlow as the command line does: its C++ start-up lines (oneDNN,
    absl) and its deprecation notes stay off the caller's stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    probe = ("import sys, infer; report = infer.inspect_model(sys.argv[1]); "
             "print(report.candidates[0].tensor)")
    done = subprocess.run([sys.executable, "-c", probe, str(frozen_small_cnn.pb_path)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "probs:0"
    assert done.stderr == ""


REFUSAL_PROBE = """
import sys
from infer.cli.app import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("imported:", *sorted(name for name in {heavy!r} if name in sys.modules))
print("code:", code)
"""
FRAMEWORKS = ("tensorflow", "onnxruntime", "tf2onnx", "onnx", "ray")


@pytest.mark.slow
def test_every_commands_early_refusals_import_no_framework(small_cnn: BuiltModel, onnx_small_cnn: ModelContract,
                                                           tmp_path: Path) -> None:
    """Issue 42: a missing file or a bad option is refused before any framework is imported (TensorFlow alone took
    14 s on a loaded machine); each command, with a mistake in a path and one in an option."""
    from tests.builders.bins import write_dataset
    from tests.infer.run_data import cnn_batches

    model, bins = str(onnx_small_cnn.path), str(write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)}).root)
    checkpoint, missing, out = str(small_cnn.prefix), str(tmp_path / "missing"), str(tmp_path / "out")
    (tmp_path / "a-file").write_text("x")
    mistakes = {
        "inspect": [["inspect", missing], ["inspect", checkpoint, "--top", "0"]],
        "freeze": [["freeze", missing, "-o", out], ["freeze", checkpoint, "-o", out, "--batch", "0"],
                   ["freeze", str(tmp_path), "-o", out, "--outputs", "probs:0"]],
        "convert": [["convert", missing], ["convert", model, "--precision-mode", "fp8"],
                    ["convert", model, "--keep-dtype", missing]],
        "dump-bin": [["dump-bin", "-m", model, "-o", out, missing], ["dump-bin", "-m", model, "-o", out, "random:0",
                                                                     "--dtype", "float7"]],
        "bin-info": [["bin-info", missing], ["bin-info", bins, "--shape", "1,2"]],
        "run": [["run", model, "--input", missing, "-o", out], ["run", model, "--input", bins, "-o", out, "--loop",
                                                                "0"],
                ["run", model, "--input", bins, "-o", out, "--engine", "spark"]],
        "compare": [["compare", model, "--input", missing, "--actual", out],
                    ["compare", model, "--input", bins, "--actual", missing],
                    ["compare", model, "--input", bins, "--actual", out, "--workers", "0"],
                    ["compare", model, "--input", bins, "--actual", out, "--engine", "spark"]],
        "tune-precision": [["tune-precision", missing, "--input", bins, "-o", out],
                           ["tune-precision", model, "--input", missing, "-o", out]],
        "pipeline": [["pipeline", "run", missing], ["pipeline", "tune", missing]],
        "demo": [["demo", "-o", str(tmp_path / "a-file")]],
    }
    from infer.cli.app import _COMMANDS

    assert set(mistakes) == set(_COMMANDS) - {"doctor"}  # doctor takes no input: it reports the frameworks
    for argv in (argv for command in mistakes.values() for argv in command):
        result = subprocess.run([sys.executable, "-c", REFUSAL_PROBE.format(heavy=FRAMEWORKS), *argv],
                                capture_output=True, text=True, timeout=300)
        assert result.stdout.splitlines()[-2:] == ["imported:", "code: 2"], (argv, result.stdout, result.stderr)
        assert any(line.startswith("error: ") for line in result.stderr.splitlines()), (argv, result.stderr)
