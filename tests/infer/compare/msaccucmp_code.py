"""Huawei's msaccucmp (the comparator inside CANN, shipped whole in the mindstudio-probe wheel), run from tests.

How it is reached. The wheel's ``msprobe/msaccucmp`` folder is a tree of top-level modules (``cmp_utils``,
``algorithm_manager``, ``dump_parse``, ...) that import each other by those names; ``msprobe/msprobe.py`` puts the
folder on sys.path before using it, and ``msaccucmp.py`` in it is the command line. The metric code needs numpy
only (its imports reach ``google.protobuf.message``, which TensorFlow brings); the ``compare`` command needs psutil
too (the test extra has it). ``msprobe`` itself is never imported: its ``__init__`` puts tensorboard's TensorFlow
stub in ``sys.modules["tensorflow"]`` wherever tensorboard is installed. msaccucmp runs in a child process with
the folder on its path, so none of its modules, logging or ``np.seterr`` reach the test process.

Installed by the README's test command and .ci/run as ``pip install --no-deps mindstudio-probe==26.2.0``: the
wheel declares pandas, skl2onnx, tensorboard, openpyxl and more for its other tools, none of which this code
needs. A test that needs it skips where it is missing, except where ``INFER_TESTS_NEED_MSPROBE=1`` (.ci/run sets
it): there a missing or different msprobe fails, since CI installs this version.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

MSPROBE_VERSION = "26.2.0"
MSPROBE_PIN = f"mindstudio-probe=={MSPROBE_VERSION}"
NEED_MSPROBE = "INFER_TESTS_NEED_MSPROBE"
_CHILD = Path(__file__).with_name("msaccucmp_child.py")
_DUMP_CHILD = Path(__file__).with_name("msaccucmp_dump_child.py")


def _missing(why: str) -> None:
    if os.environ.get(NEED_MSPROBE) == "1":
        pytest.fail(f"{why}, and {NEED_MSPROBE}=1 asks for it: pip install --no-deps {MSPROBE_PIN}")
    pytest.skip(f"{why} (pip install --no-deps {MSPROBE_PIN})")


def msaccucmp_folder() -> Path:
    """The wheel's msaccucmp folder; skips (or, where CI asks for it, fails) without mindstudio-probe."""
    spec = importlib.util.find_spec("msprobe")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        _missing("mindstudio-probe is not installed")
        raise AssertionError("unreachable")
    version = importlib.metadata.version("mindstudio-probe")
    if version != MSPROBE_VERSION:
        # The departures docs/metrics.md lists are this version's code: another version must be looked at first.
        pytest.fail(f"mindstudio-probe {version} is installed; these tests hold infer to {MSPROBE_PIN}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "msaccucmp"
    assert (folder / "msaccucmp.py").is_file(), f"{folder}: no msaccucmp.py in the wheel"
    return folder


def msaccucmp_metrics(pairs: list[tuple[np.ndarray, np.ndarray]], work: Path) -> list[dict[str, str]]:
    """msaccucmp's ten results (its strings) for each (actual, golden) pair, from its own AlgorithmManager."""
    folder = msaccucmp_folder()
    arrays = {}
    for index, (actual, golden) in enumerate(pairs):
        arrays[f"actual_{index}"], arrays[f"golden_{index}"] = actual, golden
    np.savez(work / "pairs.npz", **arrays)  # type: ignore[arg-type]
    run([sys.executable, str(_CHILD), str(folder), str(work / "pairs.npz"), str(work / "results.json")])
    found: list[dict[str, str]] = json.loads((work / "results.json").read_text())
    assert len(found) == len(pairs)
    return found


@dataclass(frozen=True)
class MsaccucmpDumps:
    """A dump folder as msaccucmp's DumpInfo reads it: its error code (None: none), and per op it finds the file
    it names, the op name, its task mode (0 normal, 1 FFTS+ automatic, 2 manual) and its outputs' arrays."""

    error: int | None
    ops: dict[str, dict[str, Any]]
    outputs: dict[str, list[np.ndarray]]


def msaccucmp_dump_folder(folder: Path, descriptors: bytes, work: Path) -> MsaccucmpDumps:
    """`folder` (one execution's files) through msaccucmp's own dump-folder code, the files' protobuf headers
    decoded with the DumpData definition `descriptors` (a serialized FileDescriptorSet): msaccucmp_dump_child.py."""
    msaccucmp = msaccucmp_folder()
    work.mkdir(parents=True, exist_ok=True)
    (work / "descriptors.pb").write_bytes(descriptors)
    run([sys.executable, str(_DUMP_CHILD), str(msaccucmp), str(folder), str(work / "descriptors.pb"),
         str(work / "dumps.json"), str(work / "dumps.npz")])
    found = json.loads((work / "dumps.json").read_text())
    arrays = np.load(work / "dumps.npz")
    outputs = {op: [arrays[f"{op}/{i}"] for i in range(entry.get("outputs", 0))] for op, entry in found["ops"].items()}
    return MsaccucmpDumps(found["error"], found["ops"], outputs)


def run_msaccucmp(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    """msaccucmp's command line (``msaccucmp.py compare -m ... -g ...``), as CANN users run it; `ok`: the exit
    codes that are not a failure (2, MSACCUCMP_NO_DUMP_FILE_ERROR, where some ops of the om have no dump)."""
    return run([sys.executable, str(msaccucmp_folder() / "msaccucmp.py"), *args], ok=ok)


def run(argv: list[str], ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in ok, f"{argv[1]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done
