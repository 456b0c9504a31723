"""Layer by layer: where the converted model leaves TensorFlow, and why.

On one batch (the first that fails, else the dataset's first), every float tensor the frozen pb computes from its
inputs is fetched from TensorFlow; every one whose name the ONNX stand-in keeps is made a graph output of a copy of
the ONNX model and fetched from ONNX Runtime. A name is compared only where the ONNX node behind it computes the
same thing (`infer.compare._layer_match`), in the layout the conversion gave it (`infer.compare._onnx_graph`), by
scale-free measures; tensors computed from random ops are never compared. `infer.compare._layer_diagnosis` then
finds where the error enters and where it grows, and `infer.compare._nonfinite` names the first inf/NaN's cause.

`dump_golden_tensors` writes TensorFlow's tensors in msaccucmp's golden naming, ``op_name.output_index.timestamp
.npy`` with ``/`` and ``.`` in the op name as ``_``, so a user with real NPU dumps can run Huawei's own comparator
against them (tests/infer/compare/test_msaccucmp_golden.py runs it on such a folder).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from atc_wrap.emulation import emulated_value, tensors_rounded_later
from binio.atomic import atomic_path
from binio.binfile import read_bin
from binio.dtypes import DTYPE_NAMES, dtype, from_tf_enum
from binio.errors import InferError
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec, node_name, output_index
from ckpt2pb.protobuf import read_graph_def
from infer.compare._layer_diagnosis import diagnose, layer_thresholds, verdict_note
from infer.compare._layer_match import correspondence, unnamed_stand_ins
from infer.compare._metrics import compute_metrics
from infer.compare._nonfinite import NonfiniteFinding, TensorInfo, classify, nonfinite_positions
from infer.compare._onnx_graph import OnnxGraph, Permutation, describe_layout, ranks_of
from infer.compare.result import CompareResult, LayerRow, LayerwiseResult
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract

log = logging.getLogger(__name__)

_NOT_ACTIVATIONS = frozenset({"Const", "Placeholder", "PlaceholderWithDefault", "VariableV2", "VarHandleOp",
                              "NoOp", "Assert"})
_ONNX_FLOATS = frozenset(dtype(name).onnx for name in DTYPE_NAMES if dtype(name).is_float)
_RANDOM_PREFIXES = ("Random", "StatelessRandom", "StatelessTruncated", "StatelessMultinomial")
_RANDOM_OPS = frozenset({"TruncatedNormal", "Multinomial", "ParameterizedTruncatedNormal", "RandomShuffle"})


class LayerwiseError(InferError):
    """A model or dataset --layerwise or --dump-golden cannot use."""


@dataclass(frozen=True)
class GraphTensor:
    """One tensor TensorFlow computes from the inputs, in graph order."""

    name: str
    op_type: str
    dtype: str
    is_float: bool
    inputs: tuple[str, ...] = ()  # the op's data inputs (control inputs left out)
    random_source: str = ""  # the random op it depends on, if any: never compared


def is_random_op(op_type: str) -> bool:
    return op_type in _RANDOM_OPS or op_type.startswith(_RANDOM_PREFIXES)


def _feeds(manifest: DatasetManifest, specs: tuple[TensorSpec, ...], wanted: tuple[TensorSpec, ...],
           stem: str) -> dict[str, np.ndarray]:
    """The batch `stem` of every input, cast to the dtype each side takes (bins are made for the converted model)."""
    feeds = {}
    for spec, target in zip(specs, wanted, strict=True):
        item = manifest.input(spec.name)
        entry = next((f for f in item.files if Path(f.name).stem == stem), item.files[0] if item.files else None)
        if entry is None:
            raise LayerwiseError(f"{manifest.path}: no batch files for input {spec.name}")
        array = read_bin(manifest.file_path(item, entry), item.spec)
        feeds[target.name] = array.astype(target.dt.np_dtype, copy=False)
    return feeds


def _load_graph(contract: ModelContract) -> Any:
    import tensorflow as tf

    tf1 = tf.compat.v1
    contract.check_pb_unchanged()
    graph_def = read_graph_def(contract.pb_path)
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    return graph


def _random_sources(graph: Any) -> dict[str, str]:
    """Op name -> the random op it depends on, for every op downstream of a random op (the random op included)."""
    sources: dict[str, str] = {}
    for op in graph.get_operations():
        if is_random_op(op.type):
            sources[op.name] = op.name
            continue
        inherited = next((sources[t.op.name] for t in op.inputs if t.op.name in sources), "")
        if inherited:
            sources[op.name] = inherited
    return sources


def graph_tensors(graph: Any, input_names: tuple[str, ...], output_names: tuple[str, ...] = ()) -> tuple[
        GraphTensor, ...]:
    """Every tensor computed (directly or not) from the inputs, in the graph's (topological) order.

    Tensors nothing reads that are not model outputs are left out: the batch statistics FusedBatchNorm also
    returns, an unused argmax; they lead nowhere, and TensorFlow often cannot even fetch them at inference."""
    fed = set(input_names)
    outputs = set(output_names)
    random = _random_sources(graph)
    tensors = []
    for op in graph.get_operations():
        from_inputs = any(t.name in fed for t in op.inputs)
        if op.type in _NOT_ACTIVATIONS or not from_inputs:
            continue
        inputs = tuple(t.name for t in op.inputs)
        for tensor in op.outputs:
            fed.add(tensor.name)
            if not tensor.consumers() and tensor.name not in outputs:
                continue
            try:
                dtype = from_tf_enum(tensor.dtype.as_datatype_enum)
            except InferError:
                continue  # strings, resources, variants: nothing to compare or dump
            tensors.append(GraphTensor(name=tensor.name, op_type=op.type, dtype=dtype.name, is_float=dtype.is_float,
                                       inputs=inputs, random_source=random.get(op.name, "")))
    return tuple(tensors)


def run_tensorflow(contract: ModelContract, manifest: DatasetManifest, stem: str = "") -> tuple[
        tuple[GraphTensor, ...], dict[str, np.ndarray]]:
    """TensorFlow's value of every graph tensor on the batch `stem` (default: the first)."""
    import tensorflow as tf

    graph = _load_graph(contract)
    tensors = graph_tensors(graph, tuple(s.name for s in contract.inputs), tuple(s.name for s in contract.outputs))
    feeds = _feeds(manifest, contract.model_inputs, contract.inputs, stem)
    with tf.compat.v1.Session(graph=graph) as session:
        feed_dict = {graph.get_tensor_by_name(name): value for name, value in feeds.items()}
        try:
            values = session.run([t.name for t in tensors], feed_dict=feed_dict)
            return tensors, {t.name: np.asarray(v) for t, v in zip(tensors, values, strict=True)}
        except Exception as exc:  # tf.errors.*: one tensor inside control flow spoils the joint fetch
            log.info("fetching all tensors at once failed (%s); fetching one by one", type(exc).__name__)
        found = {}
        for tensor in tensors:
            try:
                found[tensor.name] = np.asarray(session.run(tensor.name, feed_dict=feed_dict))
            except Exception:  # a tensor TF cannot fetch is listed as such, not an error
                continue
    return tensors, found


@dataclass(frozen=True)
class OnnxSide:
    """The ONNX model's structure and its values on the batch."""

    graph: OnnxGraph
    layouts: dict[str, Permutation | None]
    values: dict[str, np.ndarray]
    missing: dict[str, str]  # TF name -> why ONNX Runtime gave no value for it
    stand_ins: dict[str, str]  # TF name -> the unnamed ONNX tensor computing it (a fused op's output)


def _onnx_side(contract: ModelContract, manifest: DatasetManifest, tensors: list[GraphTensor],
               inputs_of: dict[str, tuple[str, ...]], stem: str) -> OnnxSide:
    """ONNX Runtime's value of each of `tensors` that the ONNX model holds (by name, or as a fused op's unnamed
    output), and why the others are missing."""
    import onnx
    import onnxruntime as ort

    path = contract.converted_path
    assert path is not None
    model = onnx.load(str(path))
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type
             for v in (*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input)}
    graph = OnnxGraph(model)
    layouts = graph.tensor_layouts(ranks_of(inferred))
    outputs = {o.name for o in model.graph.output}
    stand_ins = unnamed_stand_ins(graph, {t.name: t.op_type for t in tensors}, inputs_of,
                                  {s.name for s in contract.inputs})
    missing: dict[str, str] = {}
    wanted = []
    for name in (stand_ins.get(t.name, t.name) for t in tensors):
        if name not in graph.producer:
            missing[name] = "not in the ONNX model (fused or renamed by the converter)"
        elif types.get(name) not in _ONNX_FLOATS:
            missing[name] = "no float type known for it in the ONNX model"
        else:
            wanted.append(name)
    for name in wanted:
        if name not in outputs:
            model.graph.output.append(onnx.helper.make_tensor_value_info(name, types[name], None))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = _feeds(manifest, contract.model_inputs, contract.model_inputs, stem)
    session_inputs = [i.name for i in session.get_inputs()]
    feed = {name if name in session_inputs else node_name(name): value for name, value in feeds.items()}
    values = session.run(wanted, feed)
    later = tensors_rounded_later(model)
    found = {name: np.asarray(emulated_value(v, name, later)) for name, v in zip(wanted, values, strict=True)}
    return OnnxSide(graph=graph, layouts=layouts, missing=missing, stand_ins=stand_ins,
                    values={t.name: found[stand_ins.get(t.name, t.name)] for t in tensors
                            if stand_ins.get(t.name, t.name) in found})


def _reading(golden_shape: tuple[int, ...], actual: np.ndarray, perm: tuple[int, ...]) -> np.ndarray | None:
    """`actual` (TF's axes in order `perm`) in TF's layout, or None when its shape does not fit that."""
    if actual.ndim != len(golden_shape) or tuple(actual.shape) != tuple(golden_shape[p] for p in perm):
        return None
    return actual if perm == tuple(range(len(perm))) else np.transpose(actual, np.argsort(perm))


def aligned_to_golden(golden: np.ndarray, actual: np.ndarray, layout: Permutation | None = None, *,
                      as_is: bool = False) -> tuple[np.ndarray | None, str]:
    """`actual` in `golden`'s layout, and the layout it was read in; None (with the reason) when it cannot be.

    `layout` is the ONNX tensor's permutation of TF's axes as the conversion's transposes give it. A model output
    (`as_is`) is compared as the model gives it: a layout bug there is the user's problem, not noise. With the
    layout unknown, the shape decides where only one reading fits it; where both fit (H, W and C equal), nothing
    tells them apart, and the tensor is not compared rather than read in whichever layout is closer to TF."""
    shape = tuple(golden.shape)
    identity = tuple(range(golden.ndim))
    if as_is:
        reading = _reading(shape, actual, identity)
        if reading is None:
            return None, f"shape {list(actual.shape)} in ONNX, {list(shape)} in TensorFlow"
        if layout is not None and layout != identity:
            return reading, (f"as the model gives it, which is {describe_layout(layout)}: a transpose back to "
                             "TensorFlow's layout is missing")
        return reading, describe_layout(identity)
    if layout is not None:
        reading = _reading(shape, actual, layout)
        if reading is None:
            return None, (f"shape {list(actual.shape)} in ONNX ({describe_layout(layout)}), {list(shape)} in "
                          "TensorFlow")
        return reading, describe_layout(layout)
    candidates = [(perm, _reading(shape, actual, perm)) for perm in
                  ((identity, (0, 3, 1, 2)) if golden.ndim == 4 else (identity,))]
    fits = [(perm, reading) for perm, reading in candidates if reading is not None]
    if len(fits) == 1:
        return fits[0][1], f"{describe_layout(fits[0][0])} (the conversion does not say; the shape does)"
    if not fits:
        return None, f"shape {list(actual.shape)} in ONNX, {list(shape)} in TensorFlow"
    return None, ("layout cannot be known: the conversion's transposes do not say it (an op between reshapes or "
                  f"mixes permuted axes), and its shape {list(shape)} fits both NHWC and NCHW")


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
                             "stand-in", hint="on an Ascend server, dump the NPU tensors and use --dump-golden with "
                             "msaccucmp; here, infer convert --target onnx")


def compare_layers(contract: ModelContract, manifest: DatasetManifest, thresholds: Thresholds, *, atol: float,
                   rtol: float, with_converted: bool = True, dump_golden: Path | None = None,
                   outcome: CompareResult | None = None) -> LayerwiseResult:
    """TensorFlow against the ONNX stand-in tensor by tensor on one batch; optionally dumps TF's tensors.
    `outcome`: the verdict on the outputs, which picks the batch and which the mark must agree with."""
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
    rows = [matcher.row(tensor, golden.get(tensor.name)) for tensor in floats]
    rows_marked, origins, growth = diagnose(rows, inputs_of)
    first = next((r for r in rows_marked if r.first_failing), None)
    info = {t.name: TensorInfo(t.op_type, t.inputs) for t in tensors}
    # Each output's own first inf/NaN: in a model of several outputs, another branch's cause is not this one's.
    per_output: dict[str, NonfiniteFinding] = {}
    for spec in contract.outputs:
        own = _first_nonfinite(rows_marked, matcher.aligned, golden, info, within=_upstream(spec.name, inputs_of))
        if own is not None:
            per_output[spec.name] = own
    return LayerwiseResult(batch_stem=stem, rows=rows_marked, origins=origins, growth_tensor=growth,
                           outputs_passed=outcome.passed if outcome is not None else True,
                           note=verdict_note(first, outcome, rows_marked, stem), batch_reason=batch_reason,
                           nonfinite=_first_nonfinite(rows_marked, matcher.aligned, golden, info),
                           nonfinite_by_output=per_output)


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
        else:
            return replace(base, unmatched_reason=f"another computation: {relation.describe(tensor.op_type)} (its "
                         f"values: cosine {metrics.cosine_similarity:.4g})")
        self.matched[onnx_name] = tensor.name
        self.aligned[tensor.name] = aligned
        return replace(base, metrics=metrics, failures=failures, match=match)


def _upstream(tensor: str, inputs_of: dict[str, tuple[str, ...]]) -> set[str]:
    """`tensor` and every tensor it is computed from."""
    found = {tensor}
    pending = [tensor]
    while pending:
        for name in inputs_of.get(pending.pop(), ()):
            if name not in found:
                found.add(name)
                pending.append(name)
    return found


def _first_nonfinite(rows: tuple[LayerRow, ...], aligned: dict[str, np.ndarray], golden: dict[str, np.ndarray],
                     info: dict[str, TensorInfo], within: set[str] | None = None) -> NonfiniteFinding | None:
    """The first compared tensor (of `within`, default all) with inf/NaN where TF is finite, classified."""
    compared = {row.tensor for row in rows if row.matched}
    for row in rows:
        if within is not None and row.tensor not in within:
            continue
        actual = aligned.get(row.tensor)
        if actual is not None and nonfinite_positions(actual, golden[row.tensor]).any():
            return classify(row.tensor, actual, golden, info, lambda name: name in compared)
    return None


def golden_file_name(tensor: str, timestamp: int) -> str:
    """msaccucmp's golden naming: ``scope/conv.1:0`` -> ``scope_conv_1.0.<timestamp>.npy``. It looks an op's file up
    under the op name with ``/`` and ``.`` both made ``_`` (dump_parse/dump.py, DumpInfo.get_op_dump_file); the
    timestamp has the 16 digits it sorts dumps by (microseconds since 1970)."""
    return f"{node_name(tensor).replace('/', '_').replace('.', '_')}.{output_index(tensor)}.{timestamp}.npy"


def dump_golden_tensors(values: dict[str, np.ndarray], folder: Path) -> tuple[Path, ...]:
    """Writes every tensor as ``op_name.output_index.timestamp.npy`` (atomically, one timestamp per dump)."""
    folder = Path(folder)
    timestamp = int(time.time() * 1_000_000)
    written = []
    for name, value in values.items():
        path = folder / golden_file_name(name, timestamp)
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.save(handle, value, allow_pickle=False)
        written.append(path)
    return tuple(written)
