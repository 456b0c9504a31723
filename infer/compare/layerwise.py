"""Layer by layer: which intermediate tensor is the first where the converted model leaves TensorFlow.

On one batch (the dataset's first), every float tensor the frozen pb computes from its inputs is fetched from
TensorFlow; every one that survives in the ONNX stand-in under the same name (tf2onnx keeps TF tensor names where
an op maps one to one, and the fp16 emulation keeps them on the rounded tensor) is made a graph output of a copy of
the ONNX model and fetched from ONNX Runtime. Both lists are compared in graph order and the first tensor that
breaks a threshold is marked. Tensors computed from constants only (weights behind Identity) are no activations
and are left out; tensors with no ONNX counterpart (fused, or renamed by tf2onnx) are listed as unmatched.

`dump_golden_tensors` writes TensorFlow's tensors in msaccucmp's golden naming, ``op_name.output_index.timestamp
.npy`` with ``/`` as ``_``, so a user with real NPU dumps can run Huawei's own comparator against them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from binio.binfile import read_bin
from binio.dtypes import DTYPE_NAMES, dtype
from binio.errors import InferError
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec, node_name, output_index
from ckpt2pb.protobuf import read_graph_def
from infer.compare.metrics import compute_metrics
from infer.compare.result import LayerRow, LayerwiseResult
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract

log = logging.getLogger(__name__)

_NOT_ACTIVATIONS = frozenset({"Const", "Placeholder", "PlaceholderWithDefault", "VariableV2", "VarHandleOp",
                              "NoOp", "Assert"})
_ONNX_FLOATS = frozenset(dtype(name).onnx for name in DTYPE_NAMES if dtype(name).is_float)


class LayerwiseError(InferError):
    """A model or dataset --layerwise or --dump-golden cannot use."""


@dataclass(frozen=True)
class GraphTensor:
    """One tensor TensorFlow computes from the inputs, in graph order."""

    name: str
    op_type: str
    dtype: str
    is_float: bool


def _feeds(manifest: DatasetManifest, specs: tuple[TensorSpec, ...], wanted: tuple[TensorSpec, ...]) -> dict[
        str, np.ndarray]:
    """The first batch of every input, cast to the dtype each side takes (bins are made for the converted model)."""
    feeds = {}
    for spec, target in zip(specs, wanted, strict=True):
        item = manifest.input(spec.name)
        if not item.files:
            raise LayerwiseError(f"{manifest.path}: no batch files for input {spec.name}")
        array = read_bin(manifest.file_path(item, item.files[0]), item.spec)
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


def graph_tensors(graph: Any, input_names: tuple[str, ...], output_names: tuple[str, ...] = ()) -> tuple[
        GraphTensor, ...]:
    """Every tensor computed (directly or not) from the inputs, in the graph's (topological) order.

    Tensors nothing reads that are not model outputs are left out: the batch statistics FusedBatchNorm also
    returns, an unused argmax; they lead nowhere, and TensorFlow often cannot even fetch them at inference."""
    from binio.dtypes import from_tf_enum

    fed = set(input_names)
    outputs = set(output_names)
    tensors = []
    for op in graph.get_operations():
        from_inputs = any(t.name in fed for t in op.inputs)
        if op.type in _NOT_ACTIVATIONS or not from_inputs:
            continue
        for tensor in op.outputs:
            fed.add(tensor.name)
            if not tensor.consumers() and tensor.name not in outputs:
                continue
            try:
                dtype = from_tf_enum(tensor.dtype.as_datatype_enum)
            except InferError:
                continue  # strings, resources, variants: nothing to compare or dump
            tensors.append(GraphTensor(name=tensor.name, op_type=op.type, dtype=dtype.name, is_float=dtype.is_float))
    return tuple(tensors)


def run_tensorflow(contract: ModelContract, manifest: DatasetManifest) -> tuple[tuple[GraphTensor, ...], dict[
        str, np.ndarray]]:
    """TensorFlow's value of every graph tensor on the first batch."""
    import tensorflow as tf

    graph = _load_graph(contract)
    tensors = graph_tensors(graph, tuple(s.name for s in contract.inputs), tuple(s.name for s in contract.outputs))
    feeds = _feeds(manifest, contract.model_inputs, contract.inputs)
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


def _onnx_values(contract: ModelContract, manifest: DatasetManifest, names: list[str]) -> tuple[
        dict[str, np.ndarray], dict[str, str]]:
    """ONNX Runtime's value of each of `names` that the ONNX model holds, and why the others are missing."""
    import onnx
    import onnxruntime as ort

    path = contract.converted_path
    assert path is not None
    model = onnx.load(str(path))
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type
             for v in (*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input)}
    produced = {name for node in model.graph.node for name in node.output}
    outputs = {o.name for o in model.graph.output}
    missing: dict[str, str] = {}
    wanted = []
    for name in names:
        if name not in produced:
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
    feeds = _feeds(manifest, contract.model_inputs, contract.model_inputs)
    session_inputs = [i.name for i in session.get_inputs()]
    feed = {name if name in session_inputs else node_name(name): value for name, value in feeds.items()}
    values = session.run(wanted, feed)
    return {name: np.asarray(v) for name, v in zip(wanted, values, strict=True)}, missing


def aligned_to_golden(golden: np.ndarray, actual: np.ndarray) -> np.ndarray | None:
    """`actual` in `golden`'s shape: as it is, or from NCHW back to NHWC (tf2onnx computes convolutions and what
    follows them in NCHW under the TF tensor's name); None when neither fits.

    When H, W and C are equal both readings fit the shape, and the layout cannot be told from it: the reading
    closer to TensorFlow's values is taken (the wrong one scrambles every element, a far larger difference than
    any precision loss)."""
    as_is = actual if actual.shape == golden.shape else None
    from_nchw = None
    if actual.ndim == 4 and golden.ndim == 4 and actual.shape == (golden.shape[0], golden.shape[3],
                                                                 *golden.shape[1:3]):
        from_nchw = np.transpose(actual, (0, 2, 3, 1))
    if as_is is None or from_nchw is None:
        return as_is if as_is is not None else from_nchw
    with np.errstate(all="ignore"):
        wanted = golden.astype(np.float64)
        errors = [float(np.nansum((candidate.astype(np.float64) - wanted) ** 2)) for candidate in (as_is, from_nchw)]
    return from_nchw if errors[1] < errors[0] else as_is


def compare_layers(contract: ModelContract, manifest: DatasetManifest, thresholds: Thresholds, *, atol: float,
                   rtol: float, with_converted: bool = True, dump_golden: Path | None = None) -> LayerwiseResult:
    """TensorFlow against the ONNX stand-in tensor by tensor on the first batch; optionally dumps TF's tensors."""
    if with_converted and (contract.converted is None or contract.converted.target != "onnx"):
        found = "not converted" if contract.converted is None else f"converted to {contract.converted.target}"
        raise LayerwiseError(f"--layerwise: {contract.path} is {found}; layer-by-layer comparison runs the ONNX "
                             "stand-in", hint="on an Ascend server, dump the NPU tensors and use --dump-golden with "
                             "msaccucmp; here, infer convert --target onnx")
    if with_converted:
        contract.check_converted_unchanged()
    tensors, golden = run_tensorflow(contract, manifest)
    stem = manifest.stems[0] if manifest.stems else ""
    if dump_golden is not None:
        dump_golden_tensors(golden, dump_golden)
    if not with_converted:
        return LayerwiseResult(batch_stem=stem, rows=())
    floats = [t for t in tensors if t.is_float]
    actual, missing = _onnx_values(contract, manifest, [t.name for t in floats if t.name in golden])
    rows: list[LayerRow] = []
    first_seen = False
    for tensor in floats:
        value = golden.get(tensor.name)
        shape = tuple(int(d) for d in value.shape) if value is not None else ()
        if value is None:
            rows.append(LayerRow(tensor=tensor.name, op_type=tensor.op_type, dtype=tensor.dtype, shape=shape,
                                 metrics=None, failures=(), unmatched_reason="TensorFlow could not fetch it"))
            continue
        if tensor.name not in actual:
            rows.append(LayerRow(tensor=tensor.name, op_type=tensor.op_type, dtype=tensor.dtype, shape=shape,
                                 metrics=None, failures=(), unmatched_reason=missing.get(tensor.name, "")))
            continue
        aligned = aligned_to_golden(value, actual[tensor.name])
        if aligned is None:
            reason = f"shape {list(actual[tensor.name].shape)} in ONNX, {list(shape)} in TensorFlow"
            rows.append(LayerRow(tensor=tensor.name, op_type=tensor.op_type, dtype=tensor.dtype, shape=shape,
                                 metrics=None, failures=(), unmatched_reason=reason))
            continue
        metrics = compute_metrics(aligned, value, atol=atol, rtol=rtol)
        failures = thresholds.failures(tensor.name, metrics)
        first = bool(failures) and not first_seen
        first_seen = first_seen or first
        rows.append(LayerRow(tensor=tensor.name, op_type=tensor.op_type, dtype=tensor.dtype, shape=shape,
                             metrics=metrics, failures=failures, first_failing=first))
    return LayerwiseResult(batch_stem=stem, rows=tuple(rows))


def golden_file_name(tensor: str, timestamp: int) -> str:
    """msaccucmp's golden naming: ``scope/conv:0`` -> ``scope_conv.0.<timestamp>.npy``."""
    return f"{node_name(tensor).replace('/', '_')}.{output_index(tensor)}.{timestamp}.npy"


def dump_golden_tensors(values: dict[str, np.ndarray], folder: Path) -> tuple[Path, ...]:
    """Writes every tensor as ``op_name.output_index.timestamp.npy`` (atomically, one timestamp per dump)."""
    from binio.atomic import atomic_path

    folder = Path(folder)
    timestamp = int(time.time() * 1_000_000)
    written = []
    for name, value in values.items():
        path = folder / golden_file_name(name, timestamp)
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.save(handle, value, allow_pickle=False)
        written.append(path)
    return tuple(written)
