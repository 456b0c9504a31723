"""--layerwise judged against each tensor's expected-error band (issue 29): a healthy deep network in fp16 whose
error passes msit's RED 0.05 is not marked, and damage below msit's limits is named at the damaged layer, in fp32
and in fp16 conversions; an fp32 conversion far outside its band fails by default."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.precision.modes import PrecisionMode
from infer.compare._compare import CompareOptions, CompareResult, compare
from infer.compare._layers.bands import LayerBands
from infer.compare._layers.diagnosis import diagnose
from infer.compare.layer_result import LayerRow
from infer.contract import ModelContract, load_contract
from infer.run import run_model
from infer.run.options import RunOptions
from tests.builders.bins import write_bins
from tests.cli import run_cli
from tests.infer.compare.band_families import Family, families
from tests.infer.compare.corpus import _edit_initializer, _grouped, _node, edited_copy


def _row(name: str, red: float, *, failing: bool = False) -> LayerRow:
    from infer.compare._judge.metrics import compute_metrics
    from infer.compare.thresholds import Failure

    metrics = replace(compute_metrics(np.ones(4), np.ones(4), atol=1e-4, rtol=1e-3), relative_euclidean_distance=red)
    failures = (Failure(output=name, metric="RelativeEuclideanDistance", value=red, limit=0.05),) if failing else ()
    return LayerRow(tensor=name, op_type="Conv2D", dtype="float32", shape=(4,), metrics=metrics, failures=failures)


_CHAIN = {"a:0": ("x:0",), "b:0": ("a:0",), "c:0": ("b:0",), "d:0": ("c:0",), "e:0": ("d:0",)}


def _bands(values: dict[str, float]) -> LayerBands:
    return LayerBands(precision_mode="force_fp16", factor=10.0, emulated="emulated/model.json", bands=values)


def test_a_layer_damaged_below_the_factor_is_named_where_its_error_jumps() -> None:
    """b's damage is 8x its band (under the factor), carried on to d, where it passes the factor: the mark is b,
    where the excess jumps from 1 to 8, not d, where it crosses 10."""
    bands = _bands({"a:0": 1e-3, "b:0": 1e-3, "c:0": 1e-3, "d:0": 1e-3, "e:0": 1e-3})
    rows = [_row("a:0", 1e-3), _row("b:0", 8e-3), _row("c:0", 9e-3), _row("d:0", 1.2e-2), _row("e:0", 1.3e-2)]
    marked, origins, _ = diagnose(rows, _CHAIN, bands)
    assert [r.tensor for r in marked if r.diverges_here] == ["b:0"] and origins == ("b:0",)
    first = next(r for r in marked if r.diverges_here)
    assert first.band_excess == pytest.approx(8.0) and first.excess_jump == pytest.approx(8.0)
    # Without the band, msit's limits mark where the accumulated error first crosses RED 0.05: e, past the damage.
    by_limits = [_row(r.tensor, r.metrics.relative_euclidean_distance * 5,
                      failing=r.metrics.relative_euclidean_distance * 5 > 0.05) for r in rows if r.metrics]
    assert [r.tensor for r in diagnose(by_limits, _CHAIN)[0] if r.diverges_here] == ["d:0"]


def test_healthy_error_past_msits_limit_is_within_its_band() -> None:
    """fp16 error growing with depth past RED 0.05, each tensor at its band: nothing marked while the outputs pass;
    where they fail, the mark goes by msit's limits (the precision itself breaks them)."""
    reds = {"a:0": 0.01, "b:0": 0.03, "c:0": 0.055, "d:0": 0.06, "e:0": 0.07}
    rows = [_row(name, red, failing=red > 0.05) for name, red in reds.items()]
    marked, origins, _ = diagnose(rows, _CHAIN, _bands(reds))
    assert origins == () and not any(r.diverges_here for r in marked)
    assert all(r.band_excess == pytest.approx(1.0) for r in marked)
    marked, origins, _ = diagnose(rows, _CHAIN, _bands(reds), outputs_fail=True)
    assert origins == ("c:0",)


def test_an_overflow_the_emulation_shares_is_within_its_band() -> None:
    rows = [_row("a:0", 1e-3), _row("b:0", math.nan)]
    marked, origins, _ = diagnose(rows, _CHAIN, _bands({"a:0": 1e-3, "b:0": math.inf}))
    assert origins == () and marked[1].band_excess == 1.0
    marked, origins, _ = diagnose(rows, _CHAIN, _bands({"a:0": 1e-3, "b:0": 1e-3}))
    assert origins == ("b:0",) and math.isinf(marked[1].band_excess)


# ---- Real conversions: the families of tests/infer/compare/band_families.py, converted and damaged. ----

Edit = Callable[[Any], None]


def _family(name: str) -> Family:
    return next(f for f in families() if f.name == name)


def _converted(root: Path, family: Family, mode: PrecisionMode) -> tuple[ModelContract, Path]:
    from infer.convert._convert import ConvertOptions, convert_model
    from tests.builders.frozen import write_frozen

    frozen_folder = root / family.name / "frozen"
    if not frozen_folder.exists():
        write_frozen(frozen_folder, lambda tf: family.build(tf, tf.float32), (family.input_name,),
                     (family.output_name,))
        write_bins(root / family.name / "bins", family.input_name, family.input_shape)
    folder = root / family.name / mode
    if not folder.exists():
        shutil.copytree(frozen_folder, folder)
        convert_model(load_contract(folder / "model.json"), ConvertOptions(target="onnx", precision_mode=mode))
    return load_contract(folder / "model.json"), root / family.name / "bins"


def _layerwise(contract: ModelContract, bins: Path, root: Path, **options: Any) -> CompareResult:
    actual = run_model(contract.path, bins, root / "out" / contract.folder.name, RunOptions(backend="onnxrt")).folder
    return compare(contract.path, bins, actual, cache_root=root / "cache",
                   options=CompareOptions(layerwise=True, **options))


def _scaled(op: str, position: int, factor: float, *, nth: int = 0, grouped: bool | None = None) -> Edit:
    def edit(model: Any) -> None:
        node = _node(model, op, nth=nth, where=lambda n: grouped is None or _grouped(n) == grouped)
        _edit_initializer(model, node.input[position], lambda values: values * factor)
    return edit


def _noised(op: str, position: int, fraction: float, *, nth: int = 0, grouped: bool | None = None) -> Edit:
    def edit(model: Any) -> None:
        rng = np.random.default_rng(0)
        node = _node(model, op, nth=nth, where=lambda n: grouped is None or _grouped(n) == grouped)
        _edit_initializer(model, node.input[position],
                          lambda values: values + rng.normal(scale=fraction * float(np.std(values)),
                                                             size=values.shape))
    return edit


def _epsilon(value: float) -> Edit:
    def edit(model: Any) -> None:
        for attribute in _node(model, "BatchNormalization").attribute:
            if attribute.name == "epsilon":
                attribute.f = value
    return edit


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bands")


@pytest.mark.slow
def test_a_healthy_deep_resnet_under_force_fp16_gets_no_warning(root: Path, capsys: pytest.CaptureFixture[str],
                                                                ) -> None:
    contract, bins = _converted(root, _family("resnet"), "force_fp16")
    result = _layerwise(contract, bins, root)
    layers = result.layerwise
    assert result.passed and layers is not None and result.verdict() == "PASSED"
    past_msit = [row for row in layers.matched if row.failures]
    # fp16's error grows with depth past msit's RED 0.05 in the last blocks, and is what force_fp16 explains there.
    assert past_msit and all(row.metrics is not None and row.metrics.relative_euclidean_distance > 0.05
                             for row in past_msit)
    assert all(row.within_band(10.0) for row in layers.matched)
    assert layers.diverges_at is None and layers.note == "" and not layers.is_warning
    assert layers.bands is not None and layers.bands.precision_mode == "force_fp16"
    outcome = run_cli(capsys, "compare", contract.path, "--input", bins, "--actual", result.actual_dir,
                      "--layerwise")
    assert outcome.code == 0 and "first tensor to diverge: none" in outcome.out
    assert "past msit's limits, within its band" in outcome.out and "warning" not in outcome.out


@pytest.mark.slow
@pytest.mark.parametrize(("family", "mode", "edit", "named"), [
    ("cnn", "force_fp16", _epsilon(0.1), ("bn:0",)),  # a batch norm's epsilon changed
    ("cnn", "force_fp16", _noised("Conv", 1, 0.03, grouped=True), ("dw/conv:0", "dw/bias:0")),  # 3% noise
    ("cnn", "force_fp32", _noised("Conv", 1, 0.03, grouped=True), ("dw/conv:0", "dw/bias:0")),
    ("mlp", "force_fp16", _noised("Gemm", 1, 0.02), ("dense1/matmul:0", "dense1/bias:0")),  # 2% noise
    ("mlp", "force_fp32", _scaled("Gemm", 1, 1.05), ("dense1/matmul:0", "dense1/bias:0")),  # a weight 5% off
    ("resnet", "force_fp16", _scaled("Conv", 1, 1.05), ("stem/conv:0", "stem/bn:0")),
], ids=["cnn-bn-epsilon-fp16", "cnn-depthwise-noise-fp16", "cnn-depthwise-noise-fp32", "mlp-noise-fp16",
        "mlp-scaled-fp32", "resnet-stem-scaled-fp16"])
def test_damage_below_msits_limits_is_named_at_the_damaged_layer(root: Path, family: str, mode: PrecisionMode,
                                                                 edit: Edit, named: tuple[str, ...]) -> None:
    converted, bins = _converted(root, _family(family), mode)
    damaged = edited_copy(converted, root / "damaged" / f"{family}-{mode}-{named[-1].replace('/', '_')}", edit)
    result = _layerwise(damaged, bins, root)
    layers = result.layerwise
    assert layers is not None and layers.diverges_at is not None
    first = layers.diverges_at
    assert first.tensor in named, [(r.tensor, r.band_excess) for r in layers.matched]
    assert not first.failures or (first.metrics is not None and first.metrics.relative_euclidean_distance < 0.1)
    assert first.band_excess > 10 and first.excess_jump > 10  # caught by a margin, where the error jumps
    upstream = layers.matched[:layers.matched.index(first)]
    assert all(row.within_band(10.0) for row in upstream)


@pytest.mark.slow
def test_an_fp32_conversion_with_a_zeroed_bias_fails_by_default_through_its_band(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    converted, bins = _converted(root, _family("cnn"), "force_fp32")
    damaged = edited_copy(converted, root / "damaged" / "cnn-zero-bias", _scaled("Conv", 2, 0.0, grouped=False))
    result = _layerwise(damaged, bins, root)
    assert not result.failures  # msit's thresholds pass the outputs ...
    assert not result.passed  # ... and the band fails the run, by default for fp32
    assert result.verdict().startswith("FAILED by the expected band (msit's thresholds pass): probs:0 is ")
    layers = result.layerwise
    assert layers is not None and layers.diverges_at is not None
    assert layers.diverges_at.tensor in ("conv1/conv:0", "conv1/bias:0") and not layers.is_warning
    assert layers.diverges_at.band_excess > 100
    outcome = run_cli(capsys, "compare", damaged.path, "--input", bins, "--actual", result.actual_dir,
                      "--no-fail-on-expected", "--layerwise", "--report", root / "report")
    assert outcome.code == 0
    assert outcome.verdict.startswith("PASSED by msit's thresholds, but probs:0 is ")
    assert "warning: the outputs pass, but conv1/" in outcome.out and "x its band of " in outcome.out
    page = (root / "report" / "report.html").read_text()
    assert "<th>band (expected RED)</th><th>x band</th>" in page and "judged against its expected-error band" in page
    report = json.loads((root / "report" / "report.json").read_text())
    marked = next(row for row in report["layerwise"]["tensors"] if row["diverges_here"])
    assert marked["band_excess"] > 100 and report["layerwise"]["judged_by"] == "band"
    healthy = _layerwise(converted, bins, root)  # the undamaged conversion: inside its band, and passing
    assert healthy.passed and healthy.expected and not healthy.flagged
    assert healthy.layerwise is not None and healthy.layerwise.diverges_at is None


@pytest.mark.slow
def test_a_dropped_residual_is_compared_and_named_as_such(tmp_path: Path) -> None:
    """The Add made an Identity of its branch: the ONNX value under the Add's name is the branch's own, already
    compared; the Add is compared (not 'another computation', which left a failed run without a mark)."""
    from tests.infer.compare.damaged.cases import CASES, Corpus

    case = next(c for c in CASES if c.name == "resnet-block2-residual-dropped")
    built = Corpus(tmp_path).build(case)
    result = _layerwise(built.contract, built.bins, tmp_path)
    layers = result.layerwise
    assert not result.passed and layers is not None and layers.diverges_at is not None
    assert layers.diverges_at.tensor == "block2/add:0"
    assert layers.diverges_at.match == "input dropped: ONNX does not read block1/relu:0"
