"""From a loaded source to a frozen inference GraphDef: variables folded, inputs pinned, the training side cut.

The order matters: variables become constants first (TF's own conversion, in the restored session), then the
constant graph goes through freeze's passes (`ckpt2pb.passes`: inputs pinned, switches folded, pruned to the
outputs), is checked for what the outputs still need, and is cleaned for older consumers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from binio.graph_types import GraphDef
from binio.limits import MAX_DIM, PROTOBUF_LIMIT
from binio.spec import TensorSpec, format_shape, node_name, output_index, tensor_name
from binio.steps import OnStep, no_steps
from ckpt2pb import surgery
from ckpt2pb.compat import random_ops, unknown_to_tf115
from ckpt2pb.errors import FreezeError, GraphNameError, UnsetSwitchError
from ckpt2pb.graphinfo import (
    DATASET_OPS,
    ITERATOR_OUTPUT_OPS,
    PLACEHOLDER_OPS,
    import_graph,
    is_switch,
    shape_of,
    tensor_names,
)
from ckpt2pb.host_ops import find_host_ops, refuse_host_ops
from ckpt2pb.inputs import InputRequest, parse_value
from ckpt2pb.inspection import label_feeds, rank_output_candidates
from ckpt2pb.names import unknown_name_error
from ckpt2pb.passes import CLEANUPS, EDITS, Plan, run_passes
from ckpt2pb.source import LoadedSource, restored_session
from ckpt2pb.training_mode import TrainingMode, find_training_mode, put_in_inference_mode, summary
from ckpt2pb.verify import Reference, Verification, check_frozen, check_verification_memory, run_original

log = logging.getLogger(__name__)

DYNAMIC_BATCH = -1  # --batch -1: the first dim stays unknown, for ATC's --dynamic_batch_size
VERIFY_BATCH = 2  # the batch verification feeds a graph whose first dim stays unknown
VERIFY_DIM = 32  # any other dim kept unknown: large enough for a few stride-2 layers (a guess; --no-verify skips)


@dataclass(frozen=True)
class FrozenGraph:
    """The frozen inference graph and what it takes and gives."""

    graph_def: GraphDef  # tensorflow GraphDef
    serialized: bytes
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    fixed: dict[str, str] = field(default_factory=dict)  # placeholder -> the value it was folded to
    verification: Verification | None = None
    stripped_attrs: int = 0
    nodes: int = 0
    unknown_to_tf115: dict[str, str] = field(default_factory=dict)  # node -> op ATC's TF 1.15 parser lacks
    random_ops: dict[str, str] = field(default_factory=dict)  # node -> op that draws random numbers
    signature_keys: dict[str, str] = field(default_factory=dict)  # tensor -> its SavedModel signature key
    training_mode: TrainingMode = field(default_factory=TrainingMode)  # ops of the source's graph put in inference mode

    @property
    def inference_mode(self) -> dict[str, str]:
        """Node -> how it was put in inference mode (model.json's `inference_mode`)."""
        return {op.node: f"{op.kind}: {op.change}" for op in self.training_mode.fixable}


def _layout(shape: tuple[int | None, ...], channels_first: bool = False) -> str:
    if len(shape) != 4:
        return "ND"
    return "NCHW" if channels_first else "NHWC"


def _channels_first(graph_def: GraphDef) -> bool:
    """Whether the graph's image ops work on NCHW (TF's default, NHWC, has no attribute once stripped)."""
    return any(node.attr["data_format"].s == b"NCHW" for node in graph_def.node if "data_format" in node.attr)


def _resolve_tensor(graph: Any, name: str, what: str, known: list[str]) -> Any:
    """The tensor a user named by tensor (`op:0`) or node (`op`) name, or an error with the closest names."""
    try:
        return graph.get_tensor_by_name(tensor_name(name))
    except (KeyError, ValueError):
        try:
            op = graph.get_operation_by_name(node_name(name))
        except (KeyError, ValueError):
            op = None
        if op is not None:  # the node is there; the output index is not
            raise GraphNameError(f"{what} {name!r}: node {op.name} ({op.type}) has {len(op.outputs)} output(s)",
                                 hint="name one of its outputs, op:0 to op:N-1" if op.outputs else
                                 "infer inspect MODEL lists the likely outputs") from None
        # Suggest names of the kind given: tensors for `op:0`, nodes for `op`.
        same_kind = [k for k in known if (":" in k) == (":" in name)]
        raise unknown_name_error(what, name, same_kind) from None


def _pinned_shape(request: InputRequest, graph_shape: tuple[int | None, ...] | None, batch: int | None,
                  name: str) -> tuple[int | None, ...]:
    """The input's final shape: the graph's, refined by the user's dims and --batch, with every disagreement
    and every dim left unknown refused (but the first under --batch -1, and the dims --inputs writes -1)."""
    shape: list[int | None]
    if request.shape is not None and 0 in request.shape:
        raise FreezeError(f"input {name}: --inputs shape {format_shape(request.shape)} has a 0 dim; a model input "
                          "needs at least one element per dim")
    if request.shape is not None:
        if graph_shape is not None and len(graph_shape) != len(request.shape):
            raise FreezeError(f"input {name}: --inputs shape {format_shape(request.shape)} has rank "
                              f"{len(request.shape)}, the graph's tensor is {format_shape(graph_shape)}")
        if graph_shape is not None:
            for given, known in zip(request.shape, graph_shape, strict=True):
                if given is not None and known is not None and given != known:
                    raise FreezeError(f"input {name}: --inputs shape {format_shape(request.shape)} conflicts with "
                                      f"the graph's {format_shape(graph_shape)}")
        shape = [given if given is not None else known
                 for given, known in zip(request.shape, graph_shape or request.shape, strict=True)]
    elif graph_shape is None:
        raise FreezeError(f"input {name}: the graph does not know its rank",
                          hint=f"give its shape, e.g. --inputs '{name}[1,224,224,3]', or, for a setting such as "
                               f"keep_prob, its value: --set {node_name(name)}=VALUE")
    else:
        shape = list(graph_shape)
    if batch == DYNAMIC_BATCH and shape and shape[0] is not None:
        raise FreezeError(f"input {name}: --batch -1 keeps the first dim unknown, but it is {shape[0]} "
                          f"(shape {format_shape(tuple(shape))})", hint="give it as ? in --inputs to free it")
    if batch is not None and batch != DYNAMIC_BATCH and shape:
        if shape[0] is None:
            shape[0] = batch
        elif shape[0] != batch:
            raise FreezeError(f"input {name}: --batch {batch} conflicts with its first dim {shape[0]} "
                              f"(shape {format_shape(tuple(shape))})")
    for axis in request.dynamic:
        if graph_shape is not None and graph_shape[axis] is not None:
            written = ",".join("-1" if i in request.dynamic else "?" if d is None else str(d)
                               for i, d in enumerate(request.shape or ()))
            raise FreezeError(f"input {name}: --inputs shape [{written}] keeps dim {axis} unknown (-1), but the "
                              f"graph fixes it to {graph_shape[axis]} (shape {format_shape(graph_shape)})",
                              hint="only a dim the graph leaves unknown (?) can stay dynamic")
    if batch is not None and batch != DYNAMIC_BATCH and 0 in request.dynamic:
        raise FreezeError(f"input {name}: --batch {batch} fixes dim 0, which --inputs keeps unknown (-1)",
                          hint="give --batch -1, or a number for dim 0 in --inputs")
    kept = set(request.dynamic) | ({0} if batch == DYNAMIC_BATCH else set())
    unknown = [i for i, d in enumerate(shape) if d is None and i not in kept]
    if unknown:
        dims = ", ".join(str(i) for i in unknown)
        # the dims the user keeps unknown stay -1 in the example; only the still-unknown ones get a value
        example = ",".join("-1" if i in kept else "1" if d is None else str(d) for i, d in enumerate(shape))
        raise FreezeError(
            f"input {name}: shape {format_shape(tuple(shape))} still has unknown dims ({dims})",
            hint=f"give them in --inputs, e.g. '{name}[{example}]'" + ("" if unknown != [0] else ", or use --batch N"),
        )
    return tuple(shape)


def _plan(source: LoadedSource, graph: Any, known: list[str], outputs: Sequence[str],
          requests: Sequence[InputRequest], batch: int | None, assignments: Mapping[str, str]) -> Plan:
    """`known`: the graph's node and tensor names, sorted (for the closest-name suggestions)."""
    import numpy as np

    placeholder_nodes = {n.name: n for n in source.graph_def.node if n.op in PLACEHOLDER_OPS}
    if not requests:  # the plain placeholders the outputs need become the inputs, as the graph has them
        needed = surgery.reachable(source.graph_def, [node_name(o) for o in outputs])
        requests = [InputRequest(name=f"{name}:0") for name, node in placeholder_nodes.items()
                    if node.op != "PlaceholderWithDefault" and not is_switch(node) and name in needed
                    and name not in assignments
                    and node_name(name) not in {node_name(a) for a in assignments}]
    specs: list[TensorSpec] = []
    replaced: dict[str, str] = {}
    for request in requests:
        tensor = _resolve_tensor(graph, request.name, "input", known)
        if tensor.name in {s.name for s in specs}:
            raise FreezeError(f"input {tensor.name} is named twice in --inputs")
        graph_dtype = tensor.dtype.name
        if request.dtype is not None and request.dtype != graph_dtype:
            raise FreezeError(f"input {tensor.name}: --inputs says {request.dtype}, the graph's tensor is "
                              f"{graph_dtype}", hint="a placeholder cannot change dtype; drop the dtype or fix it")
        if request.shape is None and shape_of(tensor) is None and tensor.name in label_feeds(source.graph_def):
            raise _label_needed(tensor.name, outputs)
        shape = _pinned_shape(request, shape_of(tensor), batch, tensor.name)
        specs.append(TensorSpec(name=tensor.name, dtype=graph_dtype, shape=shape, layout=_layout(shape)))
        if tensor.op.type not in PLACEHOLDER_OPS:
            replaced[tensor.name] = f"{tensor.op.name}__input_{tensor.value_index}"
    sets: dict[str, Any] = {}
    texts: dict[str, str] = {}
    for name, text in assignments.items():
        node = node_name(name)
        if node not in placeholder_nodes:
            raise unknown_name_error("--set placeholder", name,
                                     [f"{n}:0" if ":" in name else n for n in placeholder_nodes])
        if f"{node}:0" in {s.name for s in specs}:
            raise FreezeError(f"placeholder {node}:0 is both an input and --set; choose one")
        tensor = graph.get_tensor_by_name(f"{node}:0")
        value = parse_value(text, tensor.dtype.name, what=f"--set {name}")
        graph_shape = shape_of(tensor) or ()
        if graph_shape and graph_shape[0] is None and batch is not None and batch != DYNAMIC_BATCH:
            graph_shape = (batch, *graph_shape[1:])
        if any(d is None for d in graph_shape):
            raise FreezeError(f"--set {name}: the placeholder's shape {format_shape(graph_shape)} is not static")
        sets[node] = np.full(tuple(int(d) for d in graph_shape if d is not None), value,
                             dtype=tensor.dtype.as_numpy_dtype)
        texts[node] = text
    return Plan(inputs=tuple(specs), replaced=replaced, sets=sets, set_texts=texts,
                output_nodes=tuple(dict.fromkeys(node_name(t) for t in outputs)))


def _label_needed(label: str, outputs: Sequence[str]) -> FreezeError:
    """The outputs read a label with no shape: they are the loss's or a metric's, not the model's answer; a label
    is no setting to --set."""
    return FreezeError(f"input {label}: a label (only the loss and metrics read it, and the graph does not know its "
                       f"rank), read by the outputs {', '.join(outputs)}: those are training's, not the model's answer",
                       hint="name the model's answer in --outputs (infer inspect MODEL lists it first, as what the "
                            f"loss and metrics read), or keep the labels as an input: give their shape in --inputs, "
                            f"with the other inputs ('{label}[N]')")


def _check_leftovers(graph_def: GraphDef, plan: Plan) -> None:
    """Refuses placeholders and tf.data ops the outputs still need: they would make a pb nobody can feed; and
    inputs the outputs do not read: the contract would list a tensor the pb does not take."""
    output_nodes = list(plan.output_nodes)
    reached = surgery.reachable(graph_def, output_nodes)
    unread = [spec.name for spec in plan.inputs if plan.replaced.get(spec.name, spec.node) not in reached]
    if unread:
        raise FreezeError(
            f"input {', '.join(unread)}: the outputs ({', '.join(output_nodes)}) do not depend on it",
            hint="drop it from --inputs (infer inspect MODEL lists the inputs)",
        )
    wanted = {spec.node for spec in plan.inputs} | set(plan.replaced.values())
    for node in graph_def.node:
        if node.op in PLACEHOLDER_OPS and node.name not in wanted and is_switch(node):
            raise UnsetSwitchError(f"placeholder {node.name}:0 (bool) is needed by the outputs but is neither an "
                                   "input nor set", placeholder=node.name)
        if node.op in PLACEHOLDER_OPS and node.name not in wanted:
            dtype_name = _dtype_name(node.attr["dtype"].type)
            raise FreezeError(
                f"placeholder {node.name}:0 ({dtype_name}) is needed by the outputs but is neither an input nor set",
                hint=f"add it to --inputs, or fix its value with --set {node.name}=VALUE",
            )
    reading = sorted(node.name for node in graph_def.node if node.op in DATASET_OPS)
    if reading:
        raise FreezeError(
            f"the outputs still read the tf.data pipeline through {', '.join(reading)}",
            hint="name the iterator outputs they read: " + _iterator_inputs_example(graph_def),
        )


def _iterator_inputs_example(graph_def: GraphDef) -> str:
    """``--inputs 'IteratorGetNext:0[?,8,8,3]'``: the iterator outputs some node reads, with their shapes."""
    iterators = {node.name: node for node in graph_def.node if node.op in ITERATOR_OUTPUT_OPS}
    read = sorted({f"{node_name(ref)}:{output_index(ref)}" for node in graph_def.node for ref in node.input
                   if not ref.startswith("^") and node_name(ref) in iterators})
    items = []
    for tensor in read:
        shapes = iterators[node_name(tensor)].attr["output_shapes"].list.shape
        index = output_index(tensor)
        shape = shapes[index] if index < len(shapes) else None
        dims = "" if shape is None or shape.unknown_rank else \
            "[" + ",".join("?" if d.size < 0 else str(d.size) for d in shape.dim) + "]"
        items.append(tensor + dims)
    return f"--inputs '{','.join(items)}'" if items else "--inputs 'IteratorGetNext:0[?,224,224,3]'"


def _dtype_name(dtype_enum: int) -> str:
    import tensorflow as tf

    return str(tf.as_dtype(dtype_enum).name)


def _final_names(graph_def: GraphDef, plan: Plan) -> tuple[TensorSpec, ...]:
    """Gives each new placeholder the node name of the tensor it replaced where that name is free again
    (``IteratorGetNext:0`` stays ``IteratorGetNext:0``), else ``<node>_<index>``."""
    names = {node.name for node in graph_def.node}
    specs = []
    for spec in plan.inputs:
        temporary = plan.replaced.get(spec.name)
        if temporary is None:
            specs.append(spec)
            continue
        final = spec.node if spec.name.endswith(":0") and spec.node not in names else \
            f"{spec.node}_{spec.name.rpartition(':')[2]}"
        if final in names:
            final = temporary
        surgery.rename_node(graph_def, temporary, final)
        names.add(final)
        specs.append(TensorSpec(name=f"{final}:0", dtype=spec.dtype, shape=spec.shape, layout=spec.layout))
    return tuple(specs)


def _in_inference_mode(source: LoadedSource, training: TrainingMode) -> LoadedSource:
    """The source with `training`'s ops in inference mode, on a copy of its graph (of its meta graph, which the
    variables are restored through): the session freeze restores and verifies against then computes what the
    frozen graph will, and the loaded source stays as it was read."""
    if source.meta_graph is not None:
        meta_graph = type(source.meta_graph)()
        meta_graph.CopyFrom(source.meta_graph)
        put_in_inference_mode(meta_graph.graph_def, training)
        return replace(source, meta_graph=meta_graph, graph_def=meta_graph.graph_def)
    graph_def = type(source.graph_def)()
    graph_def.CopyFrom(source.graph_def)
    put_in_inference_mode(graph_def, training)
    return replace(source, graph_def=graph_def)


def _stuck_in_training(training: TrainingMode, source: LoadedSource) -> FreezeError:
    """Batch norms computing each batch's own statistics with no moving averages in the graph to use instead."""
    return FreezeError(f"{source.path}: the outputs read {summary(training.stuck)} in training mode, with no "
                       "moving mean and variance in the graph to use instead; frozen, a sample's output would "
                       "depend on the other samples of its batch",
                       hint="build the graph in inference mode (training=False; an Estimator's PREDICT graph, "
                            "written by export_saved_model) from the same checkpoint, and freeze that")


def _at_batch(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
    """The specs with an unknown first dim (--batch -1) made VERIFY_BATCH and any other dim kept unknown (-1 in
    --inputs) VERIFY_DIM, to feed verification."""
    return tuple(replace(s, shape=tuple((VERIFY_BATCH if axis == 0 else VERIFY_DIM) if d is None else d
                                        for axis, d in enumerate(s.shape)))
                 for s in specs)


def _refuse_acting(source: LoadedSource, outputs: Sequence[str], plan: Plan, allow: bool) -> None:
    """Refuses the host ops the restored session would run: the outputs' ancestors, cut where freeze feeds (the
    inputs, the values set), and the saver's restore, fed the checkpoint's path."""
    saver_def = source.meta_graph.saver_def if source.meta_graph is not None and \
        source.meta_graph.HasField("saver_def") else None
    roots, fed = list(outputs), [spec.name for spec in plan.inputs] + [f"{name}:0" for name in plan.sets]
    if saver_def is not None and source.has_variables:
        roots.append(saver_def.restore_op_name)
        fed.append(saver_def.filename_tensor_name)
    refuse_host_ops(find_host_ops(source.graph_def, saver_def=saver_def, roots=roots, fed=fed), source.path,
                    allow=allow)


def freeze_source(source: LoadedSource, outputs: Sequence[str], *, inputs: Sequence[InputRequest] = (),
                  batch: int | None = None, assignments: Mapping[str, str] | None = None, verify: bool = True,
                  seed: int = 0, on_step: OnStep = no_steps, allow_host_ops: bool = False) -> FrozenGraph:
    """Freezes `source` into an inference graph for `outputs`; verifies it against the original by default.
    `on_step` hears each step as it starts. What the session will run (the outputs, from the inputs and the values
    set, and the saver's restore) is refused before anything runs when it holds ops that act on the host, unless
    `allow_host_ops`."""
    import tensorflow as tf
    from google.protobuf.message import EncodeError

    assignments = dict(assignments or {})
    # A SavedModel's signature keys name its tensors too (--outputs note,onset): the graph names may be
    # StatefulPartitionedCall:1 and serving_default_audio:0.
    outputs = [source.signature_tensor(name, "output") or name for name in outputs]
    inputs = [replace(request, name=source.signature_tensor(request.name, "input") or request.name)
              for request in inputs]
    graph = import_graph(source.graph_def, source.path)
    known = sorted(set(tensor_names(graph)) | {item.key for item in source.signature})  # for closest names
    # A Keras layer's name (`probs`) stands for the signature output computed in its scope, where no key, node or
    # tensor has that name (Keras 3 keys its outputs output_0, ...).
    outputs = [name if name in known else source.layer_output(name) or name for name in outputs]
    if not outputs:
        keys = [item.key for item in source.signature if item.role == "output"]
        likely = keys or [c.tensor for c in rank_output_candidates(source.graph_def, graph)[:3]]
        raise GraphNameError("no outputs given: --outputs names the tensors the frozen model returns",
                             hint=f"likely outputs: {', '.join(likely)}" if likely else "run infer inspect MODEL")
    output_tensors = [_resolve_tensor(graph, name, "output", known).name for name in outputs]
    twice = sorted({name for name in output_tensors if output_tensors.count(name) > 1})
    if twice:
        raise FreezeError(f"output {', '.join(twice)} is named twice in --outputs")
    if batch is not None and not (1 <= batch <= MAX_DIM or batch == DYNAMIC_BATCH):
        raise FreezeError(f"--batch {batch}: expected 1 to {MAX_DIM}, or -1 to keep the first dim unknown")
    plan = _plan(source, graph, known, output_tensors, inputs, batch, assignments)
    output_nodes = list(plan.output_nodes)
    _refuse_acting(source, output_tensors, plan, allow_host_ops)
    training = find_training_mode(source.graph_def, output_nodes)
    if training.stuck:
        raise _stuck_in_training(training, source)
    if training:
        on_step(f"putting {summary(training.fixable)} in inference mode")
        source = _in_inference_mode(source, training)

    # Memory: the weights are held by the session's variables, the constant graph (edited and pruned in place into
    # the frozen one: no copy of it is made), its serialisation, and the frozen graph loaded in TensorFlow. The
    # session closes, its outputs for verification taken, before the frozen graph loads.
    reference: Reference | None = None
    on_step("restoring the variables")
    with restored_session(source) as (session_graph, session):
        on_step("folding the variables into constants, then the freeze passes")
        constant = tf.compat.v1.graph_util.convert_variables_to_constants(
            session, session_graph.as_graph_def(), output_nodes)
        needed = surgery.reachable(constant, output_nodes)
        run_passes(constant, plan, EDITS)  # in place: the constant graph becomes the frozen one, no copy made
        frozen = constant
        _check_leftovers(frozen, plan)
        input_specs = _final_names(frozen, plan)
        channels_first = _channels_first(frozen)
        if channels_first:
            input_specs = tuple(replace(spec, layout=_layout(spec.shape, True)) for spec in input_specs)
        stripped = run_passes(frozen, plan, CLEANUPS)["strip-default-attrs"]
        # Serialised before its size is known: ByteSize costs a serialisation of its own (upb's, protobuf's default).
        try:
            serialized = frozen.SerializeToString(deterministic=True)  # map fields sorted: one graph, one sha256
        except (ValueError, OverflowError, EncodeError) as exc:  # protobuf's own refusal, where it makes one
            raise FreezeError("frozen graph is over protobuf's 2 GiB limit for one .pb", hint=str(exc)) from None
        if len(serialized) > PROTOBUF_LIMIT:
            raise FreezeError(f"frozen graph is {len(serialized) / 2**30:.2f} GiB, over protobuf's 2 GiB limit for "
                              "one .pb", hint="ATC and TensorFlow cannot read such a pb; freeze fewer outputs or "
                              "shrink the model")
        if verify:
            check_verification_memory(session_graph, needed, _at_batch(plan.inputs), tuple(output_tensors))
            on_step("running the original graph on seeded inputs (verification)")
            reference = run_original(session, _at_batch(plan.inputs), tuple(output_tensors),
                                     {f"{name}:0": value for name, value in plan.sets.items()}, seed=seed)
    on_step("loading the frozen graph")
    frozen_graph = import_graph(frozen, f"the frozen graph (inputs {', '.join(s.describe() for s in input_specs)})")
    output_specs = []
    for name in output_tensors:
        tensor = frozen_graph.get_tensor_by_name(name)
        shape = shape_of(tensor) or ()
        output_specs.append(TensorSpec(name=name, dtype=tensor.dtype.name, shape=shape,
                                       layout=_layout(shape, channels_first)))
    verification = None
    if reference is not None:
        on_step("running the frozen graph on the same inputs (verification)")
        verification = check_frozen(frozen_graph, reference, _at_batch(plan.inputs), _at_batch(input_specs),
                                    tuple(output_specs), seed=seed)
    fixed = dict(plan.set_texts)
    for node in source.graph_def.node:
        if node.op == "PlaceholderWithDefault" and node.name not in fixed and node.name in needed \
                and f"{node.name}:0" not in {s.name for s in plan.inputs}:
            fixed[node.name] = "default"
    log.info("froze %d nodes (%d default-valued attributes stripped)", len(frozen.node), stripped)
    return FrozenGraph(graph_def=frozen, serialized=serialized, inputs=input_specs, outputs=tuple(output_specs),
                       fixed=fixed, verification=verification, stripped_attrs=stripped, nodes=len(frozen.node),
                       unknown_to_tf115=unknown_to_tf115(frozen), random_ops=random_ops(frozen),
                       training_mode=training,
                       signature_keys={tensor_name(item.tensor): item.key for item in source.signature
                                       if tensor_name(item.tensor) in {s.name for s in (*input_specs,
                                                                                        *output_specs)}})
