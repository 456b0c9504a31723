"""What a model holds, for a user who does not know its node names: inputs, ranked output candidates,
op histogram, variables and parameters."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from binio.graph_types import GraphDef
from binio.names import node_name
from ckpt2pb.graphinfo import (
    ITERATOR_OUTPUT_OPS,
    PLACEHOLDER_OPS,
    PROBABILITY_OPS,
    feed_tensors_by_node,
    import_graph,
    is_switch_tensor,
    node_readers,
    shape_of,
    topological_order,
)
from ckpt2pb.host_ops import HostOp, is_barrier
from ckpt2pb.kinds import SourceKind
from ckpt2pb.parameters import elements_of, variables_feeding
from ckpt2pb.source import VARIABLE_OPS, LoadedSource, Role, check_checkpoint_index, computed_by, load_source
from ckpt2pb.training_heads import TrainingHeads, find_training_heads
from ckpt2pb.training_mode import TrainingModeOp, find_training_mode

# Ops that end a branch without being a model output: bookkeeping, saving, summaries, training, iterators.
_NOT_OUTPUT_OPS = frozenset({
    "NoOp", "Const", "Placeholder", "PlaceholderWithDefault", "VariableV2", "Variable", "VarHandleOp",
    "Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
    "ReadVariableOp", "VarIsInitializedOp", "IsVariableInitialized", "SaveV2", "Save", "RestoreV2", "Restore",
    "MergeV2Checkpoints", "ShardedFilename", "StringJoin", "Assert", "Print", "PrintV2", "ScalarSummary",
    "HistogramSummary", "ImageSummary", "AudioSummary", "TensorSummary", "TensorSummaryV2", "MergeSummary",
    "WriteScalarSummary", "MakeIterator", "IteratorToStringHandle", "IteratorV2", "Iterator", "AnonymousIteratorV2",
    "DeleteIterator", "InitializeTableV2", "InitializeTableFromTextFileV2",
})
_NOT_OUTPUT_PREFIXES = ("save/", "init", "gradients/", "train/", "report_uninitialized", "summaries/",
                        "global_step", "Adam", "Momentum", "GradientDescent")
_NOT_OUTPUT_SUFFIXES = ("/switch_t", "/switch_f", "/pred_id", "/Assign", "/read", "/Initializer", "/IsInitialized")
_OUTPUT_OPS = {"Softmax": 4, "Sigmoid": 4, "ArgMax": 3, "TopKV2": 3, "LogSoftmax": 3}
_OUTPUT_WORDS = re.compile(r"prob|softmax|sigmoid|logit|predict|output|argmax|score|class|embedding|pooled")
_TRAINING_WORDS = re.compile(r"loss|accuracy|metric|cross_?entropy|xent|label")
_LABEL_WORDS = re.compile(r"label|target|ground_?truth|y_?true")
_ANSWER_BONUS = 6  # what the losses and metrics read as the model's answer: the output, whatever reads it
# Ops that only describe a tensor (its shape, size, rank): left unconsumed by losses, never what a model answers.
_METADATA_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
_SAVER_FEEDS = ("save/", "saver_filename")  # the saver's own placeholders: never a model input
_TRAINING_OP_PREFIXES = ("Apply", "ResourceApply", "SparseApply", "ResourceSparseApply")


# Where the parameter count comes from: the checkpoint's variables, the variables the graph declares (no
# checkpoint holds their values), or a frozen graph's float constants.
ParametersFrom = Literal["checkpoint", "graph", "constants"]

@dataclass(frozen=True)
class PlaceholderInfo:
    tensor: str
    dtype: str
    shape: tuple[int | None, ...] | None  # None: rank unknown
    has_default: bool  # a PlaceholderWithDefault (is_training...): folded at freeze unless chosen as an input
    from_iterator: bool = False  # an IteratorGetNext output: a tf.data pipeline to cut at freeze (--inputs)
    is_label: bool = False  # only the loss and metrics read it: inference has none, and freeze leaves it out

    @property
    def is_switch(self) -> bool:
        """A bool scalar or shape-less placeholder: a switch such as is_training, fixed with --set."""
        return is_switch_tensor(self.dtype, self.shape)

    @property
    def dynamic_dims(self) -> tuple[int, ...]:
        return () if self.shape is None else tuple(i for i, d in enumerate(self.shape) if d is None)


@dataclass(frozen=True)
class OutputCandidate:
    tensor: str
    op: str
    dtype: str
    shape: tuple[int | None, ...] | None
    score: int  # higher first: softmax/sigmoid/argmax ops, then output-like names, training-like names last
    signature_key: str = ""  # the SavedModel serving signature's key for this tensor, where it has one
    read_by_loss: bool = False  # what the losses and metrics read as the model's answer (logits, probabilities)


@dataclass(frozen=True)
class SignatureEntry:
    """A SavedModel serving signature's key, with the graph tensor it names."""

    key: str
    role: Role
    tensor: str
    dtype: str
    shape: tuple[int | None, ...] | None
    computed_by: str = ""  # an output's node past the Identity nodes over it: the layer it comes from


@dataclass(frozen=True)
class GraphReport:
    source: str
    kind: SourceKind
    tf_version: str  # "" when the source does not say
    nodes: int
    placeholders: tuple[PlaceholderInfo, ...]
    candidates: tuple[OutputCandidate, ...]
    op_histogram: tuple[tuple[str, int], ...]  # most frequent first
    variables: int  # in the checkpoint; 0 for frozen graphs
    parameters: int  # elements of the checkpoint's variables, or of a frozen graph's float constants
    parameters_from: ParametersFrom
    # Of `parameters`, the elements of the variables the output candidates are computed from (the rest only
    # training reads: optimizer slots, step counters); None for a frozen graph or where they cannot be told apart.
    output_parameters: int | None = None
    signature: tuple[SignatureEntry, ...] = ()
    signature_name: str = ""
    other_signatures: tuple[str, ...] = ()  # a SavedModel's signatures besides the one read
    note: str = ""  # how the source was read, where it was not the usual way (a fallback)
    # Every op of the graph and its functions that acts on the host when run (`ckpt2pb.host_ops`): what freeze,
    # run and compare refuse without --allow-host-ops, the checkpoint saver's own marked (never refused).
    host_ops: tuple[HostOp, ...] = ()
    training_mode: tuple[TrainingModeOp, ...] = ()  # batch norms and dropouts computing as in training

    @property
    def input_keys(self) -> dict[str, str]:
        """Input tensor -> its signature key, for a SavedModel's inputs."""
        return {e.tensor: e.key for e in self.signature if e.role == "input"}

    def to_json(self) -> dict[str, Any]:
        input_keys = self.input_keys
        return {
            "schema": "infer.inspect", "version": 1,
            "source": self.source, "kind": self.kind, "tf_version": self.tf_version, "nodes": self.nodes,
            "inputs": [{"tensor": p.tensor, "dtype": p.dtype, "shape": None if p.shape is None else list(p.shape),
                        "dynamic_dims": list(p.dynamic_dims), "has_default": p.has_default,
                        "from_iterator": p.from_iterator, "label": p.is_label,
                        "signature_key": input_keys.get(p.tensor)}
                       for p in self.placeholders],
            "output_candidates": [{"tensor": c.tensor, "op": c.op, "dtype": c.dtype,
                                   "shape": None if c.shape is None else list(c.shape), "score": c.score,
                                   "signature_key": c.signature_key or None, "read_by_loss": c.read_by_loss}
                                  for c in self.candidates],
            "op_histogram": dict(self.op_histogram),
            "variables": self.variables, "parameters": self.parameters, "parameters_from": self.parameters_from,
            "output_parameters": self.output_parameters,
            "signature": {"name": self.signature_name,
                          "tensors": [{"key": e.key, "role": e.role, "tensor": e.tensor, "dtype": e.dtype,
                                       "shape": None if e.shape is None else list(e.shape),
                                       "computed_by": e.computed_by or None}
                                      for e in self.signature],
                          "others": list(self.other_signatures)} if self.signature else None,
            "note": self.note or None,
            "host_ops": [op.to_json() for op in self.host_ops],
            "training_mode": [op.to_json() for op in self.training_mode],
        }


def _is_bookkeeping(node: Any) -> bool:
    return (node.op in _NOT_OUTPUT_OPS or node.op.startswith(_TRAINING_OP_PREFIXES)
            or node.name.startswith(_NOT_OUTPUT_PREFIXES) or node.name.endswith(_NOT_OUTPUT_SUFFIXES)
            or "/gradients/" in node.name
            or any(part.lower().startswith("assert") for part in node.name.split("/")))  # tf.debugging's plumbing


def _score(node: Any) -> int:
    name = node.name.lower()
    score = _OUTPUT_OPS.get(node.op, 0)
    if _OUTPUT_WORDS.search(name.rsplit("/", 1)[-1]) or _OUTPUT_WORDS.search(name):
        score += 2
    if _TRAINING_WORDS.search(name):
        score -= 3
    if node.op in _METADATA_OPS:
        score -= 3
    return score


@dataclass(frozen=True)
class _Roles:
    """What the training side of a graph makes of its nodes and feeds."""

    training: frozenset[str]  # nodes whose results only training reads
    from_labels: frozenset[str]  # nodes computed from labels
    labels: frozenset[str]  # the feed tensors the loss and metrics take as labels
    heads: TrainingHeads
    readers: dict[str, list[str]]  # per node, the nodes that read it (`node_readers`), which the ranking needs too


def _is_model_feed(node: Any) -> bool:
    return not node.name.startswith(_SAVER_FEEDS)


def _roles(graph_def: GraphDef, readers: dict[str, list[str]]) -> _Roles:
    """Labels are the feeds (placeholders, tf.data iterator outputs) the losses and metrics take as labels
    (`find_training_heads`), and those no softmax/sigmoid op (else argmax-like op) nor the model's answer is
    computed from; a node is training-only when it is bookkeeping (loss, optimizer, summary...), is computed from
    labels (a metric's Equal), or when everything that reads it is training-only (the ArgMax an accuracy reads)."""
    order = topological_order(graph_def)
    feeds = feed_tensors_by_node(graph_def, order, _is_model_feed)
    heads = find_training_heads(graph_def, feeds, _is_model_feed)
    # Probabilities are computed from the model's inputs only; an argmax may be of one-hot labels (the tutorials'
    # accuracy), so argmax-like ops speak for the inputs only where no probability op is there.
    probability = [node for node in order if node.op in PROBABILITY_OPS]
    model_feeds = set().union(*(feeds[node.name] for node in probability or
                                [node for node in order if node.op in _OUTPUT_OPS]))
    model_feeds |= set().union(*(feeds.get(node_name(t), frozenset()) for t in heads.tensors))
    every_feed = set().union(*feeds.values())
    label_feeds = (every_feed - model_feeds if model_feeds else set()) | (heads.labels - model_feeds)
    from_labels = frozenset(name for name, used in feeds.items() if used & label_feeds)
    training: set[str] = set()
    for node in reversed(order):
        read_by = readers.get(node.name, [])
        if _is_bookkeeping(node) or node.name in from_labels or (read_by and all(r in training for r in read_by)):
            training.add(node.name)
    return _Roles(training=frozenset(training), from_labels=from_labels, labels=frozenset(label_feeds),
                  heads=heads, readers=readers)


def _offered(node: Any, shape: tuple[int | None, ...] | None, roles: _Roles) -> bool:
    """A tensor computed from the labels is offered only where it may be a model's answer: never a scalar (a
    loss, an accuracy) nor a shape or size (the loss's plumbing). Nor is any scalar of a graph whose losses or
    metrics name the model's answer: that answer is per sample, and a training graph's scalars are its losses,
    metrics and counters (tf.metrics' values, read from variables the labels update)."""
    if shape == () and roles.heads.answers:
        return False
    return node.name not in roles.from_labels or (shape != () and node.op not in _METADATA_OPS)


_REDUCTIONS = frozenset({"Mean", "Sum", "Max", "Min", "Prod", "All", "Any", "EuclideanNorm"})


def _reduces_every_axis(op: Any) -> bool:
    """A reduction over all of its input's axes, counted at run time (`tf.reduce_mean(x)` with no axis: its axes
    are `Range(0, Rank(x), 1)`), so its output is a scalar though TF's static shape says nothing: an accuracy or
    a loss over labels of unknown rank."""
    if op.type not in _REDUCTIONS or op.get_attr("keep_dims") or len(op.inputs) < 2:
        return False
    axes = op.inputs[1].op
    return axes.type == "Range" and len(axes.inputs) >= 2 and axes.inputs[1].op.type == "Rank" \
        and axes.inputs[1].op.inputs[0].name == op.inputs[0].name


def rank_output_candidates(graph_def: GraphDef, graph: Any, roles: _Roles | None = None) -> tuple[OutputCandidate, ...]:
    """Nodes nothing consumes, minus bookkeeping, best first; later nodes first among equals (deeper). What the
    losses and metrics read as the model's answer (the logits, a softmax beside the loss) comes first, whatever
    reads it; a softmax/sigmoid/argmax-like node that only training ops read (an accuracy) is a candidate too;
    scalars and shapes computed from labels (metrics, the loss's plumbing) are not."""
    roles = roles or _roles(graph_def, node_readers(graph_def))
    readers = roles.readers
    answers = roles.heads.tensors - {f"{name}:0" for name in roles.from_labels}
    losses = {node_name(loss) for loss in roles.heads.losses}  # what the gradients start from: never an answer
    ranked: list[tuple[int, int, OutputCandidate]] = []
    for position, node in enumerate(graph_def.node):
        if _is_bookkeeping(node) or node.name in losses:
            continue
        answer_node = any(node_name(t) == node.name for t in answers)
        if node.name in readers and not answer_node and not (
                node.op in _OUTPUT_OPS and node.name not in roles.from_labels
                and set(readers[node.name]) <= roles.training):
            continue
        op = graph.get_operation_by_name(node.name)
        for tensor in op.outputs:
            if tensor.dtype.name in ("resource", "variant", "string"):
                continue
            if answer_node and node.name in readers and tensor.name not in answers:
                continue  # a consumed node is offered for the answer it gives the loss, not its other outputs
            shape = shape_of(tensor)
            if shape is None and _reduces_every_axis(op):
                shape = ()  # a scalar whatever the rank: tf.reduce_mean(x) of a tensor of unknown rank
            if not _offered(node, shape, roles):
                continue
            answer = tensor.name in answers
            score = (_score(node) - (4 if node.name in roles.from_labels else 0)
                     + (_ANSWER_BONUS if answer else 0))
            candidate = OutputCandidate(tensor=tensor.name, op=node.op, dtype=tensor.dtype.name, shape=shape,
                                        score=score, read_by_loss=answer)
            ranked.append((candidate.score, position, candidate))
    ranked.sort(key=lambda item: (-item[0], -item[1]))
    return tuple(item[2] for item in ranked)


def _signature_first(ranked: tuple[OutputCandidate, ...], signature: list[SignatureEntry],
                     graph: Any) -> tuple[OutputCandidate, ...]:
    """A SavedModel's serving signature says what it answers: its outputs come first, in the signature's order
    and under their keys, whatever the ranking made of the graph's `Identity_1`s; the other candidates follow."""
    outputs = [entry for entry in signature if entry.role == "output"]
    by_tensor = {c.tensor: c for c in ranked}
    first = []
    for entry in outputs:
        found = by_tensor.get(entry.tensor)
        op = found.op if found else graph.get_tensor_by_name(entry.tensor).op.type
        first.append(OutputCandidate(tensor=entry.tensor, op=op, dtype=entry.dtype, shape=entry.shape,
                                     score=found.score if found else _OUTPUT_OPS.get(op, 0),
                                     signature_key=entry.key))
    keyed = {entry.tensor for entry in outputs}
    return (*first, *(c for c in ranked if c.tensor not in keyed))


def placeholders(graph_def: GraphDef, graph: Any, labels: frozenset[str] = frozenset()) -> tuple[PlaceholderInfo, ...]:
    """The graph's feed points: placeholders (the saver's own excepted) and tf.data iterator outputs; `labels`:
    the feed tensors that are labels (`label_feeds`)."""
    found = []
    for node in graph_def.node:
        if node.op in PLACEHOLDER_OPS and _is_model_feed(node):
            tensor = graph.get_tensor_by_name(node.name + ":0")
            found.append(PlaceholderInfo(tensor=tensor.name, dtype=tensor.dtype.name, shape=shape_of(tensor),
                                         has_default=node.op == "PlaceholderWithDefault",
                                         is_label=tensor.name in labels))
        elif node.op in ITERATOR_OUTPUT_OPS:
            for tensor in graph.get_operation_by_name(node.name).outputs:
                found.append(PlaceholderInfo(tensor=tensor.name, dtype=tensor.dtype.name, shape=shape_of(tensor),
                                             has_default=False, from_iterator=True, is_label=tensor.name in labels))
    return tuple(found)


def label_feeds(graph_def: GraphDef, roles: _Roles | None = None) -> frozenset[str]:
    """The feed tensors that are labels: those the losses and metrics take as labels, and those nothing the
    model answers is computed from whose names say label (a feed only an optimizer reads, a learning rate, is
    none)."""
    roles = roles or _roles(graph_def, node_readers(graph_def))
    return roles.heads.labels | frozenset(t for t in roles.labels if _LABEL_WORDS.search(t.lower()))


def _constant_parameters(graph_def: GraphDef) -> int:
    from tensorflow.core.framework import types_pb2

    floats = {types_pb2.DT_FLOAT, types_pb2.DT_HALF, types_pb2.DT_DOUBLE, types_pb2.DT_BFLOAT16}
    total = 0
    for node in graph_def.node:
        if node.op == "Const" and node.attr["dtype"].type in floats:
            dims = [d.size for d in node.attr["value"].tensor.tensor_shape.dim]
            if dims and all(d > 0 for d in dims) and math.prod(dims) > 1:
                total += math.prod(dims)
    return total


def _graph_variables(graph_def: GraphDef) -> dict[str, list[int]]:
    """The shapes of the graph's variables by name, for a meta graph whose checkpoint is not there."""
    return {node.name: [max(d.size, 0) for d in node.attr["shape"].shape.dim] for node in graph_def.node
            if node.op in VARIABLE_OPS and not node.name.startswith("save/")}


def inspect_loaded(source: LoadedSource) -> GraphReport:
    graph_def = source.graph_def
    graph = import_graph(graph_def, source.path)
    shapes: dict[str, list[int]] = {}
    origin: ParametersFrom
    if source.prefix is not None and source.prefix.file(".index").is_file():
        shapes = check_checkpoint_index(source.prefix)
        variables, parameters, origin = len(shapes), sum(math.prod(s) for s in shapes.values()), "checkpoint"
    elif source.has_variables:
        shapes = _graph_variables(graph_def)
        variables, parameters, origin = len(shapes), sum(math.prod(s) for s in shapes.values()), "graph"
    else:
        variables, parameters, origin = 0, _constant_parameters(graph_def), "constants"
    histogram = Counter(node.op for node in graph_def.node if not is_barrier(node))
    roles = _roles(graph_def, node_readers(graph_def))  # once, for the labels and the ranking
    signature = []
    for item in source.signature:
        tensor = graph.get_tensor_by_name(item.tensor)
        signature.append(SignatureEntry(key=item.key, role=item.role, tensor=tensor.name,
                                        dtype=tensor.dtype.name, shape=shape_of(tensor),
                                        computed_by=computed_by(graph_def, tensor.name)
                                        if item.role == "output" else ""))
    candidates = _signature_first(rank_output_candidates(graph_def, graph, roles), signature, graph)
    output_parameters = (elements_of(shapes, variables_feeding(graph_def, [c.tensor for c in candidates]))
                         if shapes and candidates else None)
    return GraphReport(
        source=str(source.path), kind=source.kind, tf_version=source.tf_version, nodes=sum(histogram.values()),
        placeholders=placeholders(graph_def, graph, label_feeds(graph_def, roles)),
        candidates=candidates,
        op_histogram=tuple(sorted(histogram.items(), key=lambda item: (-item[1], item[0]))),
        variables=variables, parameters=parameters, parameters_from=origin, output_parameters=output_parameters,
        signature=tuple(signature),
        signature_name=source.signature_name, other_signatures=source.other_signatures, note=source.note,
        host_ops=source.host_ops,
        training_mode=find_training_mode(graph_def).ops,
    )


def inspect_model(path: Path | str) -> GraphReport:
    """Loads `path` (any source kind) and reports what it holds."""
    return inspect_loaded(load_source(path))
