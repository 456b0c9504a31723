"""The corpus of damaged conversions: --layerwise must name the damaged layer first, and the mark must agree with
the verdict. Built once per session (two tiny graphs, four conversions, eighteen ONNX edits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infer.compare._compare import CompareOptions, CompareResult, compare
from infer.run import run_model
from infer.run.options import RunOptions
from tests.infer.compare.corpus import CASES, BuiltCase, build_corpus

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def corpus_results(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[BuiltCase, CompareResult]]:
    root = tmp_path_factory.mktemp("corpus")
    results = []
    for built in build_corpus(root):
        actual = run_model(built.contract.path, built.bins, root / "out" / built.case.name,
                           RunOptions(backend="onnxrt")).folder
        results.append((built, compare(built.contract.path, built.bins, actual,
                                       cache_root=root / "golden-cache",
                                       options=CompareOptions(expected_from_emulation=True, layerwise=True))))
    return results


def test_corpus_covers_every_kind_of_damage() -> None:
    assert len(CASES) >= 12
    assert {case.layer for case in CASES} == {"conv", "depthwise conv", "dense", "bias", "batch-norm scale",
                                              "activation"}
    assert {case.severity for case in CASES} == {"small", "large"}


def test_layerwise_names_the_damaged_layer_first(corpus_results: list[tuple[BuiltCase, CompareResult]]) -> None:
    misses = []
    for built, result in corpus_results:
        layers = result.layerwise
        assert layers is not None
        marked = [row.tensor for row in layers.rows if row.diverges_here]
        assert len(marked) <= 1, f"{built.case.name}: more than one tensor marked first: {marked}"
        if marked[:1] != [] and marked[0] in built.case.expected_first:
            continue
        misses.append(f"{built.case.name}: marked {marked}, expected one of {built.case.expected_first}")
    # Measured: every case (18 of 18); the bar is 11 of 12.
    assert not misses, "\n".join(misses)


def test_the_mark_agrees_with_the_verdict(corpus_results: list[tuple[BuiltCase, CompareResult]]) -> None:
    """A damaged model that still passes gets its diverging tensor as a warning, never a plain mark."""
    passing = []
    for built, result in corpus_results:
        layers = result.layerwise
        assert layers is not None and layers.diverges_at is not None, built.case.name
        if result.passed:
            passing.append(built.case.name)
            assert layers.is_warning and layers.note.startswith("warning: the outputs pass, but "), built.case.name
        else:
            assert not layers.is_warning and layers.note == "", built.case.name
    # Damage msit's default rule does not see in the fp16 modes, whose band does not fail the run by default: the
    # fp32 ones msit passes fail by their band (below).
    assert sorted(passing) == ["bn-scale-small", "conv-bias-small", "conv-kernel-small-fp16"]


def test_subtle_damage_msit_passes_is_caught_by_the_expected_band(
        corpus_results: list[tuple[BuiltCase, CompareResult]]) -> None:
    """The counts the README quotes: of the damaged models msit's rule passes, how many the per-sample check (its
    default limits, msit's applied to each sample) and the expected-error band catch. The stand-in's emulation is
    computed from the undamaged pb, so the band is the healthy conversion's error."""
    passing = [(built.case.name, built.case.precision_mode, result) for built, result in corpus_results
               if not result.failures]
    assert len(corpus_results) == 18 and len(passing) == 7
    assert [name for name, _, result in passing if result.samples_failing] == ["conv-bias-large", "mlp-dense1-small"]
    for _, _, result in passing:
        if result.samples_failing:
            caught = result.outputs[0].worst_failing
            assert caught is not None and caught.metric == "RelativeEuclideanDistance"
    assert all(len(result.expected) == 1 and result.expected[0].flagged for _, result in corpus_results)
    # Caught by a wide margin, not at the edge of the factor of 10.
    assert min(r.expected[0].ratio for _, _, r in passing) > 100
    for name, mode, result in passing:  # the verdict line says so; in fp32 the band fails the run by default
        line = result.verdict_line()
        if mode == "force_fp32":
            assert not result.passed and line.startswith("FAILED by the expected band (msit's thresholds pass): ")
        else:
            assert result.passed and line.startswith("PASSED by msit's thresholds, but "), name
        assert "(FLAGGED)" in line, name


def test_fused_layers_are_compared_through_their_unnamed_onnx_tensor(
        corpus_results: list[tuple[BuiltCase, CompareResult]]) -> None:
    """tf2onnx makes MatMul + BiasAdd one Gemm named after neither: the Gemm's output stands for fc/bias:0."""
    _, result = next((b, r) for b, r in corpus_results if b.case.name == "dense-kernel-large")
    assert result.layerwise is not None
    row = next(r for r in result.layerwise.rows if r.tensor == "fc/bias:0")
    assert row.matched and row.onnx_op == "Gemm" and row.onnx_tensor and row.diverges_here
    assert next(r for r in result.layerwise.rows if r.tensor == "fc/matmul:0").unmatched_reason.startswith("not in")


def test_a_replaced_activation_is_named_with_both_ops(corpus_results: list[tuple[BuiltCase, CompareResult]]) -> None:
    _, result = next((b, r) for b, r in corpus_results if b.case.name == "relu-to-sigmoid")
    assert result.layerwise is not None and result.layerwise.diverges_at is not None
    first = result.layerwise.diverges_at
    assert first.tensor == "conv1/relu:0" and first.match == (
        "op differs: ONNX computes it with Sigmoid, TensorFlow with Relu")
    assert first.layout == "NCHW (the converter's)"


def test_layouts_come_from_the_conversion(corpus_results: list[tuple[BuiltCase, CompareResult]]) -> None:
    _, result = corpus_results[0]
    assert result.layerwise is not None
    layouts = {row.tensor: row.layout for row in result.layerwise.matched}
    assert layouts["conv1/bias:0"] == layouts["bn:0"] == "NCHW (the converter's)"
    assert layouts["pool:0"] == layouts["probs:0"] == "as TensorFlow"


def test_corpus_is_reusable(tmp_path: Path) -> None:
    """One case alone builds on its own (other checks build the cases they need)."""
    built = build_corpus(tmp_path, (CASES[0],))
    assert len(built) == 1 and built[0].contract.converted is not None
    assert built[0].contract.converted_path is not None and built[0].contract.converted_path.exists()


@pytest.mark.parametrize("mode", ["force_fp32", "force_fp16", "allow_mix_precision"])
def test_undamaged_conversions_mark_nothing(tmp_path: Path, mode: str) -> None:
    """The control: the same models converted and not damaged pass, and no tensor is marked or warned about, in
    fp32 and in both emulated fp16 modes."""
    from tests.infer.compare.corpus import base_model, converted_copy

    for base in ("cnn", "mlp"):
        frozen, bins = base_model(tmp_path, base)
        contract = converted_copy(frozen, tmp_path / base / mode, mode)
        actual = run_model(contract.path, bins, tmp_path / base / "out", RunOptions(backend="onnxrt")).folder
        result = compare(contract.path, bins, actual, cache_root=tmp_path / "golden-cache",
                         options=CompareOptions(fail_on_expected=True, layerwise=True))
        assert result.passed and result.layerwise is not None, f"{base} {mode}: {result.verdict()}"
        assert [e.flagged for e in result.expected] == [False], f"{base} {mode}"  # the band has no false alarm
        assert result.layerwise.diverges_at is None and result.layerwise.note == "", f"{base} {mode}"
        assert all(not row.failures for row in result.layerwise.matched)
        assert len(result.layerwise.matched) >= 3  # the fused layers too (through their unnamed ONNX tensors)
