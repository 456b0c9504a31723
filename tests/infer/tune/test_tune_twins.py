"""tune-precision where tf2onnx merged equal ops: the stand-in computes the twins as one node, ATC converts each, so
keep_dtype.cfg names every twin of an op it keeps, and the file passes when fed back through convert --keep-dtype."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infer.contract import ModelContract
from tests.atc_wrap.twin_graphs import build_twin_energy
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.cli import run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def twin_energy(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, Path]:
    folder = tmp_path_factory.mktemp("twin_energy")
    contract = write_frozen(folder / "model", build_twin_energy, ("x:0",), ("out:0",))
    return contract, write_bins(folder / "bins", "x:0", (2, 64), files=2, uniform=(250, 350))


def test_keep_dtype_names_every_twin_and_passes_fed_back(twin_energy: tuple[ModelContract, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins = twin_energy
    tuned = tmp_path / "tuned"
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", bins, "-o", tuned)
    assert outcome.code == 0, outcome.out + outcome.err
    written = (tuned / "keep_dtype.cfg").read_text().splitlines()
    assert written == ["a/Square", "b/Square", "a/total", "b/total", "a/Sqrt", "b/Sqrt"]
    report = json.loads((tuned / "tune.json").read_text())
    assert report["keep_dtype"] == written and [op["name"] for op in report["ops"]] == ["a/Square", "a/total",
                                                                                         "a/Sqrt"]
    assert "and its twins b/Square" in outcome.out
    for run, keep in enumerate((tuned / "keep_dtype.cfg", None)):
        if keep is None:  # the twins alone: each applies to the node it was merged into
            keep = tmp_path / "twins.cfg"
            keep.write_text("b/Square\nb/total\nb/Sqrt\n")
        outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--keep-dtype", keep)
        assert outcome.code == 0, outcome.err
        out = tmp_path / f"out{run}"
        assert run_cli(capsys, "run", contract.path, "--input", bins, "-o", out).code == 0
        outcome = run_cli(capsys, "compare", contract.path, "--input", bins, "--actual", next(out.iterdir()))
        assert outcome.code == 0 and "\nPASSED" in outcome.out, outcome.out  # the verdict, its details below
