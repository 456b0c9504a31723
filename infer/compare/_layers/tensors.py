"""The two sides of a layer-by-layer comparison: every intermediate tensor of the frozen pb in TensorFlow, and the
tensors of the converted ONNX graph that carry their names, on one batch of the dataset."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from atc_wrap.standin.emulation import emulated_value, tensors_rounded_later
from binio.binfile import read_bin
from binio.dtypes import DTYPE_NAMES, dtype, from_tf_enum
from binio.errors import InferError
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec, node_name
from ckpt2pb.protobuf import read_graph_def
from infer.compare._layers.layouts import Layout, Shape, shapes_of, track_layouts
from infer.compare._layers.match import unnamed_stand_ins
from infer.compare._layers.onnx_graph import OnnxGraph
from infer.compare._layers.same_axes import restarted, same_axes
from infer.compare._layers.tf_frames import relative_to_tf, tf_frames
from infer.compare._layers.tf_loops import frame_paths, is_flow, loop_frames
from infer.compare.errors import LayerwiseError
from infer.contract import ModelContract

log = logging.getLogger(__name__)

_NOT_ACTIVATIONS = frozenset({"Const", "Placeholder", "PlaceholderWithDefault", "VariableV2", "VarHandleOp",
                              "NoOp", "Assert"})
_ONNX_FLOATS = frozenset(dtype(name).onnx for name in DTYPE_NAMES if dtype(name).is_float)
_RANDOM_PREFIXES = ("Random", "StatelessRandom", "StatelessTruncated", "StatelessMultinomial")
_RANDOM_OPS = frozenset({"TruncatedNormal", "Multinomial", "ParameterizedTruncatedNormal", "RandomShuffle"})


@dataclass(frozen=True)
class GraphTensor:
    """One tensor TensorFlow computes from the inputs, in graph order."""

    name: str
    op_type: str
    dtype: str
    is_float: bool
    inputs: tuple[str, ...] = ()  # the op's data inputs (control inputs left out)
    random_source: str = ""  # the random op it depends on, if any: never compared
    # TF's own layout moves: a Transpose's constant perm, a reduction's constant axes (and its keep_dims), a
    # Squeeze's squeeze_dims
    axes: tuple[int, ...] | None = None
    keep_dims: bool = False
    loop: str = ""  # the TF 1.x while loop it is computed in, once per step (`infer.compare._layers.tf_loops`)
    shape: tuple[int | None, ...] | None = None  # its static shape in the pb (None: unknown rank)


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


def _random_sources(graph: Any, drawn: frozenset[str] = frozenset()) -> dict[str, str]:
    """Op name -> the random op it depends on, for every op downstream of a random op (the random op included).
    The random ops in `drawn` are fed the numbers the device drew: neither they nor what follows them is random."""
    sources: dict[str, str] = {}
    for op in graph.get_operations():
        if op.name in drawn:
            continue
        if is_random_op(op.type):
            sources[op.name] = op.name
            continue
        inherited = next((sources[t.op.name] for t in op.inputs if t.op.name in sources), "")
        if inherited:
            sources[op.name] = inherited
    return sources


def graph_tensors(graph: Any, input_names: tuple[str, ...], output_names: tuple[str, ...] = (),
                  drawn: frozenset[str] = frozenset()) -> tuple[GraphTensor, ...]:
    """Every tensor computed (directly or not) from the inputs, in the graph's (topological) order; `drawn`: the
    random ops fed the device's numbers (`run_tensorflow`).

    Tensors nothing reads that are not model outputs are left out: the batch statistics FusedBatchNorm also
    returns, an unused argmax; they lead nowhere, and TensorFlow often cannot even fetch them at inference."""
    outputs = set(output_names)
    random = _random_sources(graph, drawn)
    fed = _computed_from(graph, set(input_names))
    needed = _leading_to(graph, outputs) if outputs else None
    loops = loop_frames(graph.get_operations())
    tensors = []
    for op in topological_operations(graph):
        if op.type in _NOT_ACTIVATIONS or is_flow(op.type) or not any(t.name in fed for t in op.inputs):
            continue
        inputs = tuple(t.name for t in op.inputs)
        for tensor in op.outputs:
            if not tensor.consumers() and tensor.name not in outputs:
                continue
            if needed is not None and tensor.name not in needed:
                continue  # leads to no output: the converter drops it
            try:
                dtype = from_tf_enum(tensor.dtype.as_datatype_enum)
            except InferError:
                continue  # strings, resources, variants: nothing to compare or dump
            tensors.append(GraphTensor(name=tensor.name, op_type=op.type, dtype=dtype.name, is_float=dtype.is_float,
                                       inputs=inputs, random_source=random.get(op.name, ""),
                                       axes=_constant_axes(op),
                                       keep_dims=op.type in _AXES_INPUT and _attribute(op, "keep_dims") is True,
                                       loop=loops.get(op.name, ""),
                                       shape=tuple(tensor.shape.as_list()) if tensor.shape.rank is not None
                                       else None))
    return tuple(tensors)


_NEXT_ITERATION = ("NextIteration", "RefNextIteration")


def topological_operations(graph: Any) -> list[Any]:
    """The graph's ops with each after the ops it reads (a while loop's back edge, Merge reading NextIteration,
    aside), otherwise in the order the pb lists them: a frozen pb need not list them in order
    (convert_variables_to_constants moves nodes), and rows are read in graph order (the first to diverge)."""
    import heapq

    ops = graph.get_operations()
    index = {op.name: position for position, op in enumerate(ops)}
    frames = frame_paths(ops)
    # An Exit waits for its loop's whole body (every NextIteration of the frame it leaves): its Switch is ready
    # once the loop's start is, and the loop's outputs would come before the steps computing them.
    steps: dict[tuple[str, ...], set[str]] = {}
    for op in ops:
        if op.type in _NEXT_ITERATION:
            steps.setdefault(frames.get(op.name, ()), set()).add(op.name)
    waits: list[set[int]] = []
    for op in ops:
        sources = {tensor.op.name for tensor in op.inputs} | {control.name for control in op.control_inputs}
        if op.type in ("Merge", "RefMerge"):
            sources = {name for name in sources if ops[index[name]].type not in _NEXT_ITERATION}
        elif op.type in ("Exit", "RefExit") and op.inputs:
            sources |= steps.get(frames.get(op.inputs[0].op.name, ()), set())
        waits.append({index[name] for name in sources if name in index and name != op.name})
    readers: dict[int, list[int]] = {}
    for position, needed in enumerate(waits):
        for source in needed:
            readers.setdefault(source, []).append(position)
    missing = [len(needed) for needed in waits]
    ready = [position for position, count in enumerate(missing) if not count]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        position = heapq.heappop(ready)
        order.append(position)
        for reader in readers.get(position, ()):
            missing[reader] -= 1
            if not missing[reader]:
                heapq.heappush(ready, reader)
    placed = set(order)
    order.extend(position for position in range(len(ops)) if position not in placed)  # a cycle left: as listed
    return [ops[position] for position in order]


def _leading_to(graph: Any, outputs: set[str]) -> set[str]:
    """The tensors the `outputs` are computed from (data and control inputs, through loops), outputs included."""
    found: set[str] = set()
    pending = [graph.get_tensor_by_name(name).op for name in outputs]
    seen: set[str] = set()
    while pending:
        op = pending.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        found.update(tensor.name for tensor in op.outputs)
        pending.extend(tensor.op for tensor in op.inputs)
        pending.extend(op.control_inputs)
    return found


def _computed_from(graph: Any, inputs: set[str]) -> set[str]:
    """Every tensor computed (directly or not) from `inputs`. Passes over the ops in graph order until nothing is
    added: a while loop's Merge reads its NextIteration, made after it (one pass stopped at the loop's first Merge
    whose start is a constant, and lost the loop's outputs and everything after them)."""
    fed = set(inputs)
    grown = True
    while grown:
        grown = False
        for op in graph.get_operations():
            if op.type in _NOT_ACTIVATIONS or not any(t.name in fed for t in op.inputs):
                continue
            for tensor in op.outputs:
                if tensor.name not in fed:
                    fed.add(tensor.name)
                    grown = True
    return fed


_AXES_INPUT = frozenset({"Transpose", "ConjugateTranspose", "Mean", "Sum", "Max", "Min", "Prod", "ArgMax",
                         "ArgMin", "All", "Any"})


def _attribute(op: Any, name: str) -> Any:
    try:
        return op.get_attr(name)
    except ValueError:
        return None


def _constant_axes(op: Any) -> tuple[int, ...] | None:
    """The axes a Transpose (its perm), a reduction or a Squeeze takes, where they are constants."""
    if op.type == "Squeeze":
        dims = _attribute(op, "squeeze_dims")
        return None if dims is None else tuple(int(d) for d in dims)
    if op.type not in _AXES_INPUT or len(op.inputs) < 2:
        return None
    import tensorflow as tf

    value = tf.get_static_value(op.inputs[1])
    return None if value is None else tuple(int(v) for v in np.asarray(value).ravel())


def random_outputs(graph: Any, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The entries of `values` that are outputs of random ops of `graph` (by tensor name), in the tensor's dtype;
    refused (LayerwiseError) where the shape is not the tensor's."""
    found = {}
    for name, value in values.items():
        try:
            tensor = graph.get_tensor_by_name(name)
        except (KeyError, ValueError):
            continue
        if not is_random_op(tensor.op.type):
            continue
        if not tensor.shape.is_compatible_with(value.shape):
            raise LayerwiseError(f"{name}: the NPU's draw has shape {list(value.shape)}, TensorFlow's "
                                 f"{tensor.op.type} gives {tensor.shape.as_list()}")
        found[name] = np.asarray(value, dtype=tensor.dtype.as_numpy_dtype)
    return found


def run_tensorflow(contract: ModelContract, manifest: DatasetManifest, stem: str = "", *,
                   drawn: Mapping[str, np.ndarray] | None = None) -> tuple[tuple[GraphTensor, ...],
                                                                           dict[str, np.ndarray]]:
    """TensorFlow's value of every graph tensor on the batch `stem` (default: the first). `drawn`: values for
    outputs of random ops (the numbers an NPU drew, from its dump), fed in place of TensorFlow's own draw, so that
    what follows them is computed from the same numbers on both sides; other entries are ignored."""
    import tensorflow as tf

    graph = _load_graph(contract)
    substitutes = random_outputs(graph, drawn or {})
    tensors = graph_tensors(graph, tuple(s.name for s in contract.inputs), tuple(s.name for s in contract.outputs),
                            frozenset(node_name(name) for name in substitutes))
    feeds = {**_feeds(manifest, contract.model_inputs, contract.inputs, stem), **substitutes}
    fetched = [t for t in tensors if not t.loop]  # a tensor inside a while loop has no value of its own to fetch
    with tf.compat.v1.Session(graph=graph) as session:
        feed_dict = {graph.get_tensor_by_name(name): value for name, value in feeds.items()}
        try:
            values = session.run([t.name for t in fetched], feed_dict=feed_dict)
            return tensors, {t.name: np.asarray(v) for t, v in zip(fetched, values, strict=True)}
        except Exception as exc:  # tf.errors.*: one tensor inside control flow spoils the joint fetch
            log.info("fetching all tensors at once failed (%s); fetching one by one", type(exc).__name__)
        found = {}
        for tensor in fetched:
            try:
                found[tensor.name] = np.asarray(session.run(tensor.name, feed_dict=feed_dict))
            except Exception:  # a tensor TF cannot fetch is listed as such, not an error
                continue
    return tensors, found


@dataclass(frozen=True)
class OnnxSide:
    """The ONNX model's structure and its values on the batch."""

    graph: OnnxGraph
    layouts: dict[str, Layout]
    values: dict[str, np.ndarray]
    missing: dict[str, str]  # TF name -> why ONNX Runtime gave no value for it
    stand_ins: dict[str, str]  # TF name -> the unnamed ONNX tensor computing it (a fused op's output)


_MOST_RESTARTS = 256  # rounds of restarts (`infer.compare._layers.same_axes`); one per op of a chain, at most


def _layouts(graph: OnnxGraph, shapes: dict[str, Shape], tf_ops: dict[str, str], tensors: list[GraphTensor],
             activations: set[str], stand_ins: dict[str, str]) -> dict[str, Layout]:
    """Each ONNX tensor's layout relative to its TF tensor: both sides' axes tracked from the inputs and composed
    (`tf_frames`), restarted where both compute a tensor in the same axes (`same_axes`) until none is left."""
    found: dict[str, str] = {}
    for _ in range(_MOST_RESTARTS):
        tracked = track_layouts(graph, shapes, tf_ops=tf_ops, starts=restarted(found, shapes))
        layouts = dict(tracked)
        for name, frame in tf_frames(tensors, activations, set(found)).items():  # after TF's own transposes
            onnx_name = stand_ins.get(name, name)
            layouts[onnx_name] = relative_to_tf(tracked.get(onnx_name), frame)
        more = {name: onnx_name for name, onnx_name in same_axes(tensors, graph, layouts, stand_ins, shapes).items()
                if name not in found}
        if not more:
            break
        found.update(more)
    return layouts


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
    tf_ops = {t.name: t.op_type for t in tensors}
    shapes = shapes_of(inferred)
    outputs = {o.name for o in model.graph.output}
    stand_ins = unnamed_stand_ins(graph, tf_ops, inputs_of,
                                  {s.name for s in contract.inputs})
    layouts = _layouts(graph, shapes, tf_ops, tensors, set(inputs_of), stand_ins)
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
