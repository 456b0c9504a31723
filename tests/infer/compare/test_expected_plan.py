"""compare's expected-error band emulates the conversion's own precision plan: the chip it was planned for, not the
stand-in's default. On Ascend910 Exp has an fp32 kernel; planned for Ascend310 the same emulation overflows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infer.compare._compare import CompareOptions, compare
from infer.compare._judge.expected import emulated_run
from infer.contract import load_contract
from infer.convert._convert import ConvertOptions, convert_model
from infer.run import run_model
from infer.run.options import RunOptions
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_exp

pytestmark = pytest.mark.slow


def test_the_band_emulates_the_chip_the_model_was_planned_for(tmp_path: Path) -> None:
    from binio.manifest import load_manifest

    frozen = write_frozen(tmp_path / "model", build_exp, ("x:0",), ("out:0",))
    bins = write_bins(tmp_path / "bins", "x:0", (2, 16), files=1, uniform=(11.5, 12.5))
    results = {}
    for chip in ("Ascend910A", "Ascend310"):
        folder = tmp_path / chip
        shutil.copytree(frozen.folder, folder)
        converted = convert_model(load_contract(folder / "model.json"), ConvertOptions(
            target="onnx", precision_mode="force_fp32", soc_version=chip)).contract
        staged, _ = emulated_run(converted, load_manifest(bins), tmp_path / f"cache-{chip}")
        assert staged.converted is not None
        plan = staged.converted.plan()
        assert plan is not None and (plan.chip, plan.precision_mode) == (chip, "force_fp32")
        actual = run_model(converted.path, bins, tmp_path / f"out-{chip}", RunOptions(backend="onnxrt")).folder
        results[chip] = compare(converted.path, bins, actual, options=CompareOptions(expected_from_emulation=True),
                                cache_root=tmp_path / f"cache-{chip}")
    (band,) = results["Ascend910A"].expected
    assert results["Ascend910A"].passed and not band.flagged and band.emulated_rmse == band.actual_rmse
    assert not results["Ascend310"].passed  # Exp in fp16 there: inf, in the model and in its emulation alike
