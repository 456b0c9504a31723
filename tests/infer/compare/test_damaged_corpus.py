"""The damaged-conversion corpus of issue 29 (tests/infer/compare/damaged/): at least 30 damaged conversions across
five model families, a third of them below msit's per-tensor limits at the damaged layer, and every family's
healthy conversion in fp32 and fp16. Done when the layer-wise mark is exact on at least 90% of the damaged ones
with no mark on any healthy one (37 of 40 with the error bands); `python -m tests.infer.compare.damaged.measure`
prints the case-by-case table."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.infer.compare.damaged import damages as d
from tests.infer.compare.damaged.cases import CASES, PRECISION_MODES, Corpus
from tests.infer.compare.damaged.damages import onnx_node
from tests.infer.compare.damaged.families import FAMILIES
from tests.infer.compare.damaged.layer_error import cosine_and_red, onnx_value, tf_value
from tests.infer.compare.damaged.measure import Measurement, measure

_EMPTY_GRAPH = SimpleNamespace(node=[])  # a frozen graph for damages that read none of its constants


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Measurement:
    return measure(tmp_path_factory.mktemp("damaged-corpus"))


def test_the_corpus_spans_families_modes_and_subtle_damage() -> None:
    assert len(CASES) >= 30 and len({case.name for case in CASES}) == len(CASES)
    assert {case.family for case in CASES} == set(FAMILIES) and len(FAMILIES) >= 5
    for family in FAMILIES:
        assert {case.precision_mode for case in CASES if case.family == family} == set(PRECISION_MODES), family
    assert 3 * sum(case.subtle for case in CASES) >= len(CASES)


@pytest.mark.slow
def test_a_case_is_its_conversion_with_only_the_onnx_model_changed(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    case = CASES[0]
    built, healthy = corpus.build(case), corpus.healthy(case.family, case.precision_mode)
    assert built.contract.pb_sha256 == healthy.contract.pb_sha256 and built.bins == healthy.bins
    assert built.contract.converted is not None and healthy.contract.converted is not None
    assert built.contract.converted.sha256 != healthy.contract.converted.sha256
    assert built.contract.converted_path is not None and built.contract.converted_path.read_bytes() != (
        healthy.contract.converted_path.read_bytes() if healthy.contract.converted_path else b"")


@pytest.mark.slow
def test_healthy_conversions_pass_with_no_mark(measured: Measurement) -> None:
    healthy = measured.healthy
    assert len(healthy) == len(FAMILIES) * len(PRECISION_MODES)
    for outcome in healthy:
        assert outcome.passed and not outcome.band_flagged and not outcome.marked, outcome.name


@pytest.mark.slow
def test_healthy_models_rounded_otherwise_get_no_mark(measured: Measurement) -> None:
    """fp16 weights one step off ATC's rounding are within what the precision explains: no tensor is marked and
    no output breaks msit's limits. The output band, at its factor of 10, may flag the deepest fp32 one (every
    weight moved the same way adds up over its depth: 11.3x when measured), which fp32's default
    --fail-on-expected then fails: reported by measure.py, not asserted either way."""
    controls = measured.rounded_otherwise
    assert len(controls) == len(FAMILIES) * len(PRECISION_MODES)
    assert [o.name for o in controls if o.marked] == []
    assert [o.name for o in controls if not o.passed and not o.band_flagged] == []


@pytest.mark.slow
def test_every_damage_shows_in_the_outputs(measured: Measurement) -> None:
    """No case is damage the outputs cannot see: each fails msit's rule or its precision mode's band."""
    damaged = measured.damaged
    assert [o.name for o in damaged if o.passed and not o.band_flagged] == []


@pytest.mark.slow
def test_a_third_of_the_damage_stays_below_msits_limits_at_its_layer(measured: Measurement) -> None:
    """Measured at the damaged layer itself (TF against the damaged ONNX node), not by the diagnosis under test; the
    cases marked subtle are exactly those below cosine 0.99 and RED 0.05 there."""
    damaged = measured.damaged
    assert 3 * sum(o.below_limits for o in damaged) >= len(damaged)
    assert [o.name for o in damaged if o.subtle != o.below_limits] == []


@pytest.mark.slow
def test_the_mark_names_the_damaged_layer(measured: Measurement) -> None:
    """Issue 29's bar. Measured before the error bands: 18 of 40 exact, none of the 20 below msit's limits; with
    each tensor judged against its band: 39 of 40, 19 of the 20 below msit's limits."""
    damaged = measured.damaged
    assert len(damaged) >= 30 and len({o.family for o in damaged}) >= 5
    assert not [o.name for o in [*measured.healthy, *measured.rounded_otherwise] if o.marked]
    misses = [f"{o.name}: marked {o.marked or 'nothing'}, expected {o.expected_layer}" for o in damaged if not o.exact]
    assert 10 * len(misses) <= len(damaged), "\n".join(misses)


@pytest.mark.slow
def test_a_folded_batch_norms_epsilon_is_damaged_as_tensorflow_computes_it(tmp_path: Path) -> None:
    """tf2onnx folds the batch norm into its Conv; the damage recomputes the folded weights. TensorFlow with the
    new epsilon written into the pb computes what the damaged ONNX node computes (to the fp16 input casts of an fp32
    conversion's Conv), and not what the healthy one does."""
    import tensorflow as tf

    case = next(c for c in CASES if c.name == "resnet-stem-bn-epsilon")
    corpus = Corpus(tmp_path)
    built = corpus.build(case)
    assert built.contract.converted_path is not None
    graph_def = tf.compat.v1.GraphDef.FromString(built.contract.pb_path.read_bytes())
    node = next(n for n in graph_def.node if n.name == case.damage.layer)
    node.attr["epsilon"].f = 0.1
    changed = tmp_path / "changed.pb"
    changed.write_bytes(graph_def.SerializeToString())
    feed = {FAMILIES[case.family].input_tensor: corpus.first_batch(case.family)}
    damaged = onnx_value(built.contract.converted_path, case.damage.layer, case.expected_layer, feed)
    assert cosine_and_red(damaged, tf_value(changed, case.expected_layer, feed))[1] < 2e-3
    assert cosine_and_red(damaged, tf_value(built.contract.pb_path, case.expected_layer, feed))[1] > 0.02


def _two_convs_sharing_a_bias() -> Any:
    """x -> Conv "a/bias" (emulated: its output rounded by a Cast pair, the TF name on the rounded tensor) -> Conv
    "b/bias"; both Convs read the one bias initializer, as tf2onnx shares equal constants."""
    import onnx
    from onnx import helper, numpy_helper

    weights = [numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), name) for name in ("wa", "wb")]
    bias = numpy_helper.from_array(np.zeros(2, np.float32), "shared_bias")
    nodes = [helper.make_node("Conv", ["x", "wa", "shared_bias"], ["a/bias:0/fp32"], name="a/bias"),
             helper.make_node("Cast", ["a/bias:0/fp32"], ["a/bias:0/fp16"], to=onnx.TensorProto.FLOAT16),
             helper.make_node("Cast", ["a/bias:0/fp16"], ["a/bias:0"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Conv", ["a/bias:0", "wb", "shared_bias"], ["b/bias:0"], name="b/bias")]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "g", [value("x", onnx.TensorProto.FLOAT, [1, 2, 2, 2])],
                              [value("b/bias:0", onnx.TensorProto.FLOAT, None)], [*weights, bias])
    return helper.make_model(graph)


def test_a_damage_finds_its_node_through_the_emulations_casts() -> None:
    model = _two_convs_sharing_a_bias()
    assert onnx_node(model, "a/bias").name == "a/bias" and onnx_node(model, "b/bias").name == "b/bias"
    d.scaled_weight("a/bias", 1.05)(model, d.FrozenGraph(_EMPTY_GRAPH), np.random.default_rng(0))
    assert np.allclose(d.initializer(model, "wa"), 1.05) and np.allclose(d.initializer(model, "wb"), 1.0)


def test_a_damage_refuses_a_constant_another_layer_reads() -> None:
    model = _two_convs_sharing_a_bias()
    with pytest.raises(ValueError, match="shared_bias is read by"):
        d.zeroed_bias("a/bias")(model, d.FrozenGraph(_EMPTY_GRAPH), np.random.default_rng(0))
