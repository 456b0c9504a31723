"""Ops a graph computes in training mode, put in inference mode: batch norms on each batch's own statistics and
dropouts drawing their mask.

A checkpoint's meta graph is the graph it was trained with. An Estimator's model_dir holds its TRAIN graph, in
which `tf.compat.v1.layers.batch_normalization(training=True)` is a FusedBatchNormV3 whose `is_training` is a
Python bool (true, its default, so a stripped graph does not even show it) and a dropout's mask is drawn; no
placeholder is left to fold. Frozen as it is, a sample's output moves with its batch neighbours (dump-bin's
zero padding rows included), and every check made against that same graph passes. What each op needs for
inference is in the graph:

- a FusedBatchNorm(V2/V3) reads the moving mean and variance as its inputs 3 and 4 in either mode: inference mode
  is `is_training` false. Where those inputs are empty (`tf.nn.fused_batch_norm` called without them), the moving
  averages its training updates (below) take their place;
- a batch norm of separate ops (`tf.nn.moments`, Keras' on a rank-2 tensor) reads the batch's mean and variance;
  the op that updates a moving average from each (`assign_sub(var, (var - batch_stat) * decay)`, as Keras and
  tf.layers write it) names the variable that holds it, which its readers read instead;
- an inverted dropout `where(u >= rate, x / (1 - rate), 0)` (TF 1.x: `x / keep_prob * floor(keep_prob + u)`)
  returns `x` on average, the mask's probability of keeping times the scale being 1: the dropout becomes an
  Identity of `x`. The probability is read from the uniform draw's range and the threshold, so a random mask that
  is not a dropout's (noise the model keeps) is left alone.

What cannot be put in inference mode is said: a fused batch norm with neither moving statistics nor an update of
them; and a tensor normalised by its own mean over axis 0 with no moving average to read instead, which is a batch
norm only where axis 0 is the batch (a time-major sequence's mean over time is not), is named as a suspect.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from binio.graph_types import GraphDef
from binio.spec import node_name, output_index, tensor_name
from ckpt2pb import surgery
from ckpt2pb.ranges import ValueRange, value_ranges

BATCH_NORM_OPS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
_ASSIGN_SUB_OPS = frozenset({"AssignSub", "AssignSubVariableOp"})
_VALUE_OPS = frozenset({"Identity", "ReadVariableOp", "Snapshot"})  # a variable's value, read
_SELECT_OPS = frozenset({"Select", "SelectV2"})
_COMPARISONS = frozenset({"GreaterEqual", "Greater", "LessEqual", "Less"})
_PASS_OPS = frozenset({"Identity", "Squeeze", "Reshape", "StopGradient", "ExpandDims", "Snapshot"})
_CENTERING_OPS = frozenset({"Sub", "SquaredDifference"})
_SCALE_TOLERANCE = 1e-5  # how far the dropout's scale times its keep probability may sit from 1 (float rounding)

KIND_BATCH_NORM = "batch norm"
KIND_BATCH_STATISTIC = "batch statistic"  # the mean or variance of a batch norm of separate ops
KIND_DROPOUT = "dropout"


@dataclass(frozen=True)
class _Edit:
    """What puts one node in inference mode."""

    node: str
    inputs: tuple[tuple[int, str], ...] = ()  # input position -> the tensor it reads instead
    not_training: bool = False  # a fused batch norm's is_training set false
    identity_of: str = ""  # the node becomes an Identity of this tensor


@dataclass(frozen=True)
class TrainingModeOp:
    """One op computing in training mode: what it is, and how it is put in inference mode ("" where it cannot)."""

    node: str
    op: str
    kind: str  # KIND_BATCH_NORM | KIND_BATCH_STATISTIC | KIND_DROPOUT
    change: str
    edits: tuple[_Edit, ...] = ()
    # Only likely: a tensor centred by its own mean over axis 0 is a batch norm where axis 0 is the batch, but a
    # time-major sequence's or an unbatched spectrogram's mean over time is no training mode: said, not refused.
    suspect: bool = False

    def to_json(self) -> dict[str, str | bool | None]:
        return {"node": self.node, "op": self.op, "kind": self.kind, "change": self.change or None,
                "suspect": self.suspect}


@dataclass(frozen=True)
class TrainingMode:
    """What a graph computes in training mode on the way to its outputs."""

    ops: tuple[TrainingModeOp, ...] = ()

    @property
    def fixable(self) -> tuple[TrainingModeOp, ...]:
        return tuple(op for op in self.ops if op.change)

    @property
    def stuck(self) -> tuple[TrainingModeOp, ...]:
        """Those that cannot be put in inference mode."""
        return tuple(op for op in self.ops if not op.change and not op.suspect)

    @property
    def suspects(self) -> tuple[TrainingModeOp, ...]:
        """Those that may be batch statistics, left as they are."""
        return tuple(op for op in self.ops if op.suspect)

    def __bool__(self) -> bool:
        return bool(self.ops)


def _data(node: Any) -> list[str]:
    return [ref for ref in node.input if not ref.startswith("^")]


def _variable_behind(ref: str, nodes: dict[str, Any]) -> str | None:
    """The variable node a tensor reads (through Identity and ReadVariableOp), or None."""
    for _ in range(8):
        node = nodes.get(node_name(ref))
        if node is None:
            return None
        if node.op in ("VariableV2", "Variable", "VarHandleOp"):
            return node.name
        if node.op not in _VALUE_OPS or not _data(node):
            return None
        ref = _data(node)[0]
    return None


def moving_averages(graph_def: GraphDef) -> dict[str, str]:
    """Batch statistic tensor -> the tensor holding its moving average, from each update
    `assign_sub(var, (value_of_var - statistic) * decay)` (tf.layers' and Keras' batch norms, TF's
    assign_moving_average; Keras guards the delta with a `where` on the batch being empty)."""
    nodes = {node.name: node for node in graph_def.node}
    found: dict[str, str] = {}
    for node in graph_def.node:
        data = _data(node)
        if node.op not in _ASSIGN_SUB_OPS or len(data) < 2:
            continue
        variable = _variable_behind(data[0], nodes)
        delta = nodes.get(node_name(data[1]))
        if delta is not None and delta.op in _SELECT_OPS and len(_data(delta)) == 3:
            delta = nodes.get(node_name(_data(delta)[1]))
        if variable is None or delta is None or delta.op != "Mul":
            continue
        for ref in _data(delta):
            difference = nodes.get(node_name(ref))
            if difference is None or difference.op != "Sub" or len(_data(difference)) != 2:
                continue
            value, statistic = _data(difference)
            if _variable_behind(value, nodes) == variable and nodes.get(node_name(statistic)) is not None \
                    and nodes[node_name(statistic)].op != "Cast":  # another dtype: no drop-in replacement
                found[tensor_name(statistic)] = value
    return found


def _is_empty_constant(ref: str, nodes: dict[str, Any]) -> bool:
    node = nodes.get(node_name(ref))
    if node is None or node.op != "Const":
        return False
    shape = node.attr["value"].tensor.tensor_shape
    return any(dim.size == 0 for dim in shape.dim)


def _batch_norms(nodes: dict[str, Any], scope: Collection[str], averages: dict[str, str]) -> list[TrainingModeOp]:
    found = []
    for name in sorted(scope):
        node = nodes.get(name)
        if node is None or node.op not in BATCH_NORM_OPS:
            continue
        if "is_training" in node.attr and not node.attr["is_training"].b:
            continue
        data = _data(node)
        if len(data) < 5:
            continue
        empty = [position for position in (3, 4) if _is_empty_constant(data[position], nodes)]
        if not empty:
            found.append(TrainingModeOp(name, node.op, KIND_BATCH_NORM,
                                        "is_training false: the moving mean and variance (its inputs 3-4) instead of "
                                        "each batch's own", (_Edit(name, not_training=True),)))
            continue
        moving = {position: averages.get(f"{name}:{position - 2}") for position in empty}
        if all(moving.values()):
            inputs = tuple((position, str(moving[position])) for position in empty)
            held = ", ".join(_variable_behind(ref, nodes) or node_name(ref) for _, ref in inputs)
            found.append(TrainingModeOp(name, node.op, KIND_BATCH_NORM,
                                        f"is_training false, reading the moving averages its training updates ({held})",
                                        (_Edit(name, inputs=inputs, not_training=True),)))
        else:
            found.append(TrainingModeOp(name, node.op, KIND_BATCH_NORM, ""))
    return found


def _separate_batch_norms(graph_def: GraphDef, nodes: dict[str, Any], scope: Collection[str],
                          averages: dict[str, str]) -> list[TrainingModeOp]:
    """Batch statistics of separate ops (moments) on the outputs' path, their readers sent to the moving averages."""
    readers: dict[str, list[tuple[str, int]]] = {}
    for node in graph_def.node:
        if node.name not in scope:
            continue
        for position, ref in enumerate(node.input):
            if not ref.startswith("^") and tensor_name(ref) in averages:
                readers.setdefault(tensor_name(ref), []).append((node.name, position))
    found = []
    for statistic, places in sorted(readers.items()):
        if nodes[node_name(statistic)].op in BATCH_NORM_OPS:
            continue  # a fused batch norm's own outputs 1-2: the op itself is put in inference mode
        moving = averages[statistic]
        edits: dict[str, list[tuple[int, str]]] = {}
        for reader, position in places:
            edits.setdefault(reader, []).append((position, moving))
        found.append(TrainingModeOp(node_name(statistic), nodes[node_name(statistic)].op, KIND_BATCH_STATISTIC,
                                    "a batch statistic: its readers read the moving average "
                                    f"{_variable_behind(moving, nodes) or node_name(moving)}",
                                    tuple(_Edit(reader, inputs=tuple(inputs)) for reader, inputs in edits.items())))
    return found


def _own_statistics(graph_def: GraphDef, nodes: dict[str, Any], scope: Collection[str],
                    averages: dict[str, str]) -> list[TrainingModeOp]:
    """Tensors normalised by their own mean over axis 0 (the batch), with no moving average found for it: a batch
    norm this cannot put in inference mode. The mark of one: a Mean over axes holding 0 whose result (through
    reshapes) is taken away from the very tensor it was taken of."""
    from ckpt2pb.constfold import constant_values

    means = [nodes[name] for name in sorted(scope) if nodes[name].op == "Mean" and len(_data(nodes[name])) == 2]
    axes = constant_values(graph_def, [_data(node)[1] for node in means]) if means else {}
    readers: dict[str, list[Any]] = {}
    for node in graph_def.node:
        if node.name in scope:
            for ref in _data(node):
                readers.setdefault(tensor_name(ref), []).append(node)
    found = []
    for mean in means:
        value = axes.get(_data(mean)[1])
        if value is None or 0 not in value.reshape(-1).tolist():
            continue
        source = tensor_name(_data(mean)[0])
        chain, frontier = {tensor_name(mean.name)}, [tensor_name(mean.name)]
        while frontier:
            current = frontier.pop()
            for reader in readers.get(current, []):
                out = tensor_name(reader.name)
                if reader.op in _PASS_OPS and out not in chain:
                    chain.add(out)
                    frontier.append(out)
        if chain & averages.keys():
            continue
        centred = any(reader.op in _CENTERING_OPS and source in {tensor_name(r) for r in _data(reader)}
                      for tensor in chain for reader in readers.get(tensor, []))
        if centred:
            found.append(TrainingModeOp(mean.name, mean.op, KIND_BATCH_STATISTIC, "", suspect=True))
    return found


def _point(ref: str, ranges: dict[str, ValueRange]) -> float | None:
    found = ranges.get(node_name(ref)) if output_index(ref) == 0 else None
    return None if found is None or found.random else found.point


def _drawn(ref: str, ranges: dict[str, ValueRange]) -> ValueRange | None:
    found = ranges.get(node_name(ref)) if output_index(ref) == 0 else None
    return found if found is not None and found.random and found.hi > found.lo else None


def _keep_probability(mask: str, nodes: dict[str, Any], ranges: dict[str, ValueRange]) -> float | None:
    """The probability that a 0/1 mask made from one uniform draw is 1: `u >= rate` (or a cast of it), or TF 1.x's
    `floor(keep_prob + u)`; None for any other mask."""
    node = nodes.get(node_name(mask))
    if node is not None and node.op == "Cast" and _data(node):
        node = nodes.get(node_name(_data(node)[0]))
    if node is None:
        return None
    data = _data(node)
    if node.op in _COMPARISONS and len(data) == 2:
        drawn, threshold, op = _drawn(data[0], ranges), _point(data[1], ranges), node.op
        if drawn is None:  # rate <= u: the same comparison, its sides swapped
            drawn, threshold = _drawn(data[1], ranges), _point(data[0], ranges)
            op = {"Less": "Greater", "LessEqual": "GreaterEqual", "Greater": "Less", "GreaterEqual": "LessEqual"}[op]
        if drawn is None or threshold is None:
            return None
        above = (drawn.hi - threshold) / (drawn.hi - drawn.lo)
        return min(1.0, max(0.0, above if op in ("Greater", "GreaterEqual") else 1.0 - above))
    if node.op == "Floor" and data:
        drawn = _drawn(data[0], ranges)
        if drawn is None or abs(drawn.hi - drawn.lo - 1.0) > _SCALE_TOLERANCE or not drawn.lo < 1.0 <= drawn.hi:
            return None
        return drawn.hi - 1.0
    return None


def _scaled(ref: str, nodes: dict[str, Any], ranges: dict[str, ValueRange]) -> tuple[str, float] | None:
    """`x * c`, `c * x` or `x / k` (c, k computed from constants): (x, the factor)."""
    node = nodes.get(node_name(ref))
    if node is None or len(_data(node)) != 2:
        return None
    first, second = _data(node)
    if node.op == "Mul":
        for x, factor in ((first, second), (second, first)):
            value = _point(factor, ranges)
            if value is not None and _point(x, ranges) is None:
                return x, value
    if node.op in ("RealDiv", "Div"):
        value = _point(second, ranges)
        if value:
            return first, 1.0 / value
    return None


def _is_weight_sized(node: Any) -> bool:
    """A constant of more than one element (a frozen graph's weight)."""
    if node.op != "Const":
        return False
    count = 1
    for dim in node.attr["value"].tensor.tensor_shape.dim:
        count *= max(dim.size, 0)
    return count > 1


def _inverted_dropouts(graph_def: GraphDef, nodes: dict[str, Any], scope: Collection[str]) -> list[TrainingModeOp]:
    samplers = [name for name in scope if "Random" in nodes[name].op]
    if not samplers:
        return []
    # A dropout's rate, keep probability and scale are scalars: no weight is read into memory for its range.
    ranges = value_ranges(graph_def, {name for name in scope if not _is_weight_sized(nodes[name])})
    found = []
    for name in sorted(scope):
        node = nodes[name]
        data = _data(node)
        pairs: list[tuple[str, str]] = []
        if node.op in _SELECT_OPS and len(data) == 3 and _point(data[2], ranges) == 0.0:
            pairs = [(data[1], data[0])]
        elif node.op == "Mul" and len(data) == 2:
            pairs = [(data[0], data[1]), (data[1], data[0])]
        for kept, mask in pairs:
            probability = _keep_probability(mask, nodes, ranges)
            scaled = _scaled(kept, nodes, ranges) if probability else None
            if scaled is None or probability is None:
                continue
            x, factor = scaled
            if abs(factor * probability - 1.0) <= _SCALE_TOLERANCE:
                found.append(TrainingModeOp(name, node.op, KIND_DROPOUT,
                                            f"off: an Identity of {tensor_name(x)} (keep probability "
                                            f"{probability:.3g}, scale {factor:.3g})",
                                            (_Edit(name, identity_of=x),)))
                break
    return found


def _inside_conds(graph_def: GraphDef) -> set[str]:
    """The nodes between a TF1 cond's (or loop's) Switch and its Merge: a cond on a switch (is_training) chooses
    their mode itself, and freeze folds it to the branch the user's --set or the default takes. (TF2's conds keep
    their branches in the function library, out of reach here.)"""
    readers: dict[str, list[Any]] = {}
    for node in graph_def.node:
        for ref in _data(node):
            readers.setdefault(node_name(ref), []).append(node)
    inside: set[str] = set()
    frontier = [node.name for node in graph_def.node if node.op in ("Switch", "RefSwitch")]
    while frontier:
        for reader in readers.get(frontier.pop(), []):
            if reader.op not in ("Merge", "RefMerge") and reader.name not in inside:
                inside.add(reader.name)
                frontier.append(reader.name)
    return inside


def _training_side(name: str) -> bool:
    return any(part == "gradients" or part.startswith("gradients_") for part in name.split("/"))


def find_training_mode(graph_def: GraphDef, targets: Collection[str] | None = None) -> TrainingMode:
    """The ops computing in training mode that the `targets` nodes read (by data), or, without targets, anywhere
    outside the gradients."""
    nodes = {node.name: node for node in graph_def.node}
    if targets is None:
        scope: Collection[str] = {name for name in nodes if not _training_side(name)}
    else:
        scope = surgery.reachable(graph_def, list(targets), data_only=True) & nodes.keys()
    scope = set(scope) - _inside_conds(graph_def)
    averages = moving_averages(graph_def)
    ops = [*_batch_norms(nodes, scope, averages), *_separate_batch_norms(graph_def, nodes, scope, averages),
           *_own_statistics(graph_def, nodes, scope, averages), *_inverted_dropouts(graph_def, nodes, scope)]
    return TrainingMode(ops=tuple(ops))


def put_in_inference_mode(graph_def: GraphDef, found: TrainingMode) -> int:
    """Applies `found`'s edits to `graph_def` in place (the graph they were found in, or a copy); returns how many
    nodes changed."""
    edits: dict[str, list[_Edit]] = {}
    for op in found.fixable:
        for edit in op.edits:
            edits.setdefault(edit.node, []).append(edit)
    changed = 0
    for node in graph_def.node:
        for edit in edits.get(node.name, []):
            for position, ref in edit.inputs:
                node.input[position] = ref
            if edit.not_training:
                node.attr["is_training"].b = False
            if edit.identity_of:
                controls = [ref for ref in node.input if ref.startswith("^")]
                surgery.make_identity(node, node.attr["T"].type, [edit.identity_of, *controls])
            changed += 1
    return changed


def summary(ops: Collection[TrainingModeOp], limit: int = 3) -> str:
    """``2 batch norms (bn1/FusedBatchNormV3, bn2/FusedBatchNormV3), 2 batch statistics (...) and 1 dropout
    (drop/SelectV2)``."""
    parts = []
    for kind in (KIND_BATCH_NORM, KIND_BATCH_STATISTIC, KIND_DROPOUT):
        names = [op.node for op in ops if op.kind == kind]
        if names:
            shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
            parts.append(f"{len(names)} {kind}{'s' if len(names) > 1 else ''} ({shown})")
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
