"""Layer by layer: where the converted model leaves TensorFlow, and why.

On one batch (the first that fails, else the dataset's first), every float tensor the frozen pb computes from its
inputs is fetched from TensorFlow; every one whose name the ONNX stand-in keeps is made a graph output of a copy of
the ONNX model and fetched from ONNX Runtime. A name is compared only where the ONNX node behind it computes the
same thing (`infer.compare._layers.match`), in the layout the conversion gave it
(`infer.compare._layers.onnx_graph`), by scale-free measures; tensors computed from random ops are never compared.
`infer.compare._layers.diagnosis` then finds where the error enters and where it grows, and
`infer.compare._layers.nonfinite` names the first inf/NaN's cause, both through `infer.compare._layers.conclusion`,
which an NPU dump's comparison ends with too.

`dump_golden_tensors` writes TensorFlow's tensors in msaccucmp's golden naming, ``op_name.output_index.timestamp
.npy`` with ``/`` and ``.`` in the op name as ``_``, so a user with real NPU dumps can run Huawei's own comparator
against them (tests/infer/compare/test_msaccucmp_golden.py runs it on such a folder).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from binio.errors import InferError
from binio.manifest import DatasetManifest
from infer.compare._judge.expected import emulated_model
from infer.compare._judge.metrics import compute_metrics, relative_euclidean_distance
from infer.compare._layers.bands import LayerBands, band_of
from infer.compare._layers.conclusion import conclude
from infer.compare._layers.diagnosis import layer_thresholds
from infer.compare._layers.golden_dump import dump_golden_tensors
from infer.compare._layers.layout_reading import aligned_to_golden
from infer.compare._layers.loop_rows import collapse_loops
from infer.compare._layers.match import Correspondence, correspondence
from infer.compare._layers.tensors import (
    GraphTensor,
    LayerwiseError,
    OnnxSide,
    _onnx_side,
    run_tensorflow,
)
from infer.compare.layer_result import LayerRow, LayerwiseResult
from infer.compare.options import DEFAULT_FACTOR
from infer.compare.result import CompareResult
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract

log = logging.getLogger(__name__)


def _batch(outcome: CompareResult | None, manifest: DatasetManifest) -> tuple[str, str]:
    """The batch to go through: the first that fails on its own in a failing output, else the first."""
    first = manifest.stems[0] if manifest.stems else ""
    if outcome is None or outcome.passed:
        return first, "the first batch"
    for output in outcome.outputs:
        for batch in output.batches:
            if batch.failures:
                return batch.stem, f"the first batch where {output.name} fails"
    for output in outcome.outputs:
        if output.failing_samples and manifest.batch:
            sample = output.failing_samples[0]
            stems = manifest.stems
            return stems[min(sample // manifest.batch, len(stems) - 1)], (
                f"the batch of sample {sample}, the first of {output.name} that fails on its own")
    return first, "the first batch (no batch or sample fails on its own)"


def check_layerwise(contract: ModelContract) -> None:
    """Refuses --layerwise for a model that is not the ONNX stand-in (an om's tensors cannot be read here)."""
    if contract.converted is None or contract.converted.target != "onnx":
        found = "not converted" if contract.converted is None else f"converted to {contract.converted.target}"
        raise LayerwiseError(f"--layerwise: {contract.path} is {found}; layer-by-layer comparison runs the ONNX "
                             "stand-in", hint="for an om, compare an NPU dump: infer run --dump on the device, then "
                             "compare --npu-dump; here, infer convert --target onnx")


def emulated_bands(contract: ModelContract, manifest: DatasetManifest, stem: str, floats: list[GraphTensor],
                   golden: dict[str, np.ndarray], inputs_of: dict[str, tuple[str, ...]], cache_root: Path,
                   factor: float) -> tuple[LayerBands | None, str]:
    """Each tensor's band on the batch `stem`: its RED in the stand-in's emulation of an undamaged conversion of
    the same pb in the contract's precision mode (`infer.compare._layers.bands`), read as the converted model's
    tensors are (same names, the emulated model's own layouts). None, and why, where the emulation cannot be had:
    the tensors are then judged by msit's limits."""
    try:
        staged, _ = emulated_model(contract, manifest, cache_root)
    except InferError as exc:
        log.warning("no expected-error band for the layers: %s", exc.message)
        return None, f"no expected-error band: {exc.message}"
    outputs = {s.name for s in contract.outputs}
    wanted = [t for t in floats if t.name in golden and not t.random_source]
    side = _onnx_side(staged, manifest, wanted, inputs_of, stem)
    bands = {}
    for tensor in wanted:
        value = side.values.get(tensor.name)
        if value is None:
            continue
        onnx_name = side.stand_ins.get(tensor.name, tensor.name)
        aligned, _ = aligned_to_golden(golden[tensor.name], value, side.layouts.get(onnx_name),
                                       as_is=tensor.name in outputs)
        if aligned is not None:
            bands[tensor.name] = band_of(relative_euclidean_distance(aligned, golden[tensor.name]))
    assert staged.converted is not None
    return LayerBands(precision_mode=staged.converted.precision_mode, factor=factor, emulated=str(staged.path),
                      bands=bands), ""


def compare_layers(contract: ModelContract, manifest: DatasetManifest, thresholds: Thresholds, *, atol: float,
                   rtol: float, with_converted: bool = True, dump_golden: Path | None = None,
                   outcome: CompareResult | None = None, bands_from: Path | None = None,
                   factor: float = DEFAULT_FACTOR) -> LayerwiseResult:
    """TensorFlow against the ONNX stand-in tensor by tensor on one batch; optionally dumps TF's tensors.
    `outcome`: the verdict on the outputs, which picks the batch and which the mark must agree with. `bands_from`:
    the cache root of the emulation that gives each tensor its expected-error band (None: the tensors are judged
    by msit's limits alone, as tune-precision's seeds are); `factor`: how many times its band a tensor may reach."""
    if with_converted:
        check_layerwise(contract)
        contract.check_converted_unchanged()
    # --dump-golden alone dumps the first batch, the one a user dumps on the device by default.
    stem, batch_reason = _batch(outcome if with_converted else None, manifest)
    tensors, golden = run_tensorflow(contract, manifest, stem)
    if dump_golden is not None:
        dump_golden_tensors(golden, dump_golden)
    if not with_converted:
        return LayerwiseResult(batch_stem=stem, rows=())
    floats = [t for t in tensors if t.is_float]
    inputs_of = {t.name: t.inputs for t in tensors}
    onnx_side = _onnx_side(contract, manifest, [t for t in floats if t.name in golden and not t.random_source],
                           inputs_of, stem)
    matcher = _Matcher(layer_thresholds(thresholds), atol, rtol, onnx_side, inputs_of,
                       {s.name for s in contract.inputs}, {s.name for s in contract.outputs})
    rows = collapse_loops(floats, [matcher.row(tensor, golden.get(tensor.name)) for tensor in floats])
    bands, band_note = emulated_bands(contract, manifest, stem, floats, golden, inputs_of, bands_from, factor) \
        if bands_from is not None else (None, "")
    return conclude(contract, tensors, golden, rows, matcher.aligned, stem=stem, batch_reason=batch_reason,
                    outcome=outcome, bands=bands, band_note=band_note)


class _Matcher:
    """Decides, tensor by tensor in graph order, whether the ONNX tensor of a TF name is compared, and how."""

    def __init__(self, thresholds: Thresholds, atol: float, rtol: float, onnx_side: OnnxSide,
                 inputs_of: dict[str, tuple[str, ...]], graph_inputs: set[str], graph_outputs: set[str]) -> None:
        self.thresholds, self.atol, self.rtol = thresholds, atol, rtol
        self.onnx = onnx_side
        self.inputs_of = inputs_of
        self.matched = {name: name for name in graph_inputs}  # ONNX name -> TF name, of every compared tensor
        self.graph_outputs = graph_outputs
        self.aligned: dict[str, np.ndarray] = {}

    def row(self, tensor: GraphTensor, value: np.ndarray | None) -> LayerRow:
        shape = tuple(int(d) for d in value.shape) if value is not None else ()
        base = LayerRow(tensor=tensor.name, op_type=tensor.op_type, dtype=tensor.dtype, shape=shape, metrics=None,
                        failures=())
        if tensor.random_source:
            return replace(base, unmatched_reason=f"computed from the random op {tensor.random_source}: never "
                         "compared", random_source=tensor.random_source)
        if value is None:
            return replace(base, unmatched_reason="TensorFlow could not fetch it")
        actual = self.onnx.values.get(tensor.name)
        if actual is None:
            return replace(base, unmatched_reason=self.onnx.missing.get(tensor.name, ""))
        onnx_name = self.onnx.stand_ins.get(tensor.name, tensor.name)
        node = self.onnx.graph.computing_node(onnx_name)
        if node is None:
            return replace(base, unmatched_reason="no ONNX node computes it")
        relation = correspondence(tensor.name, tensor.op_type, node, self.onnx.graph, self.inputs_of, self.matched)
        aligned, layout = aligned_to_golden(value, actual, self.onnx.layouts.get(onnx_name),
                                            as_is=tensor.name in self.graph_outputs)
        base = replace(base, onnx_op=node.op_type, onnx_tensor=onnx_name if onnx_name != tensor.name else "")
        if aligned is None:
            return replace(base, unmatched_reason=layout)
        base = replace(base, layout=layout)
        metrics = compute_metrics(aligned, value, atol=self.atol, rtol=self.rtol)
        failures = self.thresholds.failures(tensor.name, metrics)
        if relation.same_computation:
            match = "op and inputs"
        elif not failures:
            match = f"values ({relation.describe(tensor.op_type)})"
        elif relation.inputs_match:
            match = f"op differs: {relation.describe(tensor.op_type)}"  # a swapped op is itself a divergence
        elif dropped := _dropped_inputs(relation, node.outputs, self.matched, tensor.name):
            # The ONNX value is one of TF's inputs: an input the conversion dropped (a lost residual), itself a
            # divergence, where reading other tensors would be another computation under this name.
            match = f"input dropped: ONNX does not read {dropped}"
        else:
            return replace(base, unmatched_reason=f"another computation: {relation.describe(tensor.op_type)} (its "
                         f"values: cosine {metrics.cosine_similarity:.4g})")
        self.matched[onnx_name] = tensor.name
        self.aligned[tensor.name] = aligned
        return replace(base, metrics=metrics, failures=failures, match=match)


def _dropped_inputs(relation: Correspondence, outputs: Sequence[str], matched: dict[str, str], tensor: str) -> str:
    """TF's inputs the ONNX node computing `tensor` leaves out, where it passes one of them through (it is the
    node computing an input already compared: the op became an Identity of it); "" else. A node that merely reads
    fewer compared tensors is not taken for one: an input it reads may be one no name matched (tf2onnx's reordered
    sums read a partial sum of their own)."""
    passed = {matched[name] for name in outputs if name in matched and matched[name] != tensor} & relation.tf_frontier
    return ", ".join(sorted(relation.tf_frontier - passed)) if passed else ""
