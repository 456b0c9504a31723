"""What a training graph's losses and metrics read: the model's answer (its logits or probabilities) on one side,
the labels on the other.

A training graph's logits are often read by nothing but the loss and an accuracy (`in_top_k`, argmax == label),
so ranking the nodes nothing consumes misses them and offers the loss and the accuracy instead. Which tensor is
the model's and which the labels' is read from the data flow, whatever ops the loss is written with (a huber loss,
`mean(abs(pred - y))`, a sigmoid cross-entropy, Keras' accuracies, a loss written by hand):

- the losses are what the gradients start from (`tf.gradients`' seed `gradients/grad_ys_0` is read by the
  gradient of the loss's own op, `gradients/<loss>_grad/...`);
- the labels' path is a feed's data flow that no weight has touched; where it first meets a tensor computed from
  other feeds with the weights (`pred - y`, `logits * labels` inside the sigmoid cross-entropy, `Equal` of an
  accuracy), that tensor is the model's answer, seen through what a loss or metric does to it (an argmax, a
  threshold, a cast of either, a log, an epsilon or a clip, its own reshapes);
- a feed is no label where the model's answer is computed from it, or where it flows into the weights' ops
  itself (an attention mask added to the scores meets weighted data too, but goes on into the next layer).

Graphs whose weights are no variables (constants) fall back on the ops whose operands have fixed roles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from binio.graph_types import GraphDef
from binio.names import node_name, tensor_name
from ckpt2pb.graphinfo import ITERATOR_OUTPUT_OPS, PLACEHOLDER_OPS, PROBABILITY_OPS, topological_order
from ckpt2pb.surgery import reachable

# Loss and metric ops whose operands have fixed roles: op -> (the model's operand, the labels' operand).
_ROLE_OPERANDS = {
    "SparseSoftmaxCrossEntropyWithLogits": (0, 1),
    "SoftmaxCrossEntropyWithLogits": (0, 1),
    "InTopK": (0, 1),
    "InTopKV2": (0, 1),
}
# Comparisons whose operands are alike (an accuracy's argmax == label, a regression loss's squared difference):
# the side that is a feed, seen through what labels go through (a cast, a reshape, the argmax of one-hot labels),
# is the labels, where the other side is computed from other feeds.
_COMPARISON_OPS = frozenset({"Equal", "NotEqual", "SquaredDifference"})
_LABEL_PATH_OPS = frozenset({"Identity", "Reshape", "Cast", "StopGradient", "ExpandDims", "Squeeze", "ArgMax",
                             "OneHot", "Snapshot"})
_BRANCH_OPS = frozenset({"If", "StatelessIf"})  # tf.losses' remove_squeezable_dimensions: cond(pred, labels)


# Weights: what the gradients update. A graph with no variable (a frozen one) has its weights as constants.
_VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp", "AutoReloadVariable"})
# Ops that write a variable or apply an update (an optimizer's, a metric's running total): they read variables and
# data but compute nothing the model answers.
_UPDATE_OP = re.compile(r"^(Assign|ResourceApply|ResourceSparseApply|Apply|SparseApply|ScatterAdd|ResourceScatter)")
_GRAD_YS = re.compile(r"^(?P<scope>(?:.*/)?gradients(?:_\d+)?)/grad_ys_\d+$")
# What a loss or metric does to the model's answer before it meets the labels, walked back to the answer: anywhere
# (they change what it is: scores to a class id, probabilities to flags, to their log) ...
_ANSWER_TRANSFORMS = frozenset({"ArgMax", "ArgMin", "Round", "Log", "Log1p", "Greater", "GreaterEqual", "Less",
                                "LessEqual", "Maximum", "Minimum", "ClipByValue", "Add", "AddV2", "Sub"})
# ... and, in the loss's or metric's own scope only, what merely reshapes or casts it (an Identity or a cast
# naming the logits is the user's).
_LOSS_INSERTED_OPS = frozenset({"Reshape", "Cast", "ExpandDims", "Squeeze", "Identity", "StopGradient", "Snapshot"})
_FIRST_OPERAND_OPS = frozenset({"Reshape", "ExpandDims", "Squeeze", "ArgMax", "ArgMin"})  # the others: shape, axis
_METADATA_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
_INTEGER_OR_BOOL = frozenset({3, 9, 10, 4, 5, 6, 17, 22, 23})  # DT_INT32/64, BOOL, UINT8, INT16, INT8, UINT16/32/64


@dataclass(frozen=True)
class TrainingHeads:
    """The tensors the losses and metrics take as the model's answer (logits first met first), the probability
    ops computed from them (a softmax beside the loss), the feed tensors they take as labels, and the losses (what
    the gradients start from)."""

    answers: tuple[str, ...] = ()
    probabilities: tuple[str, ...] = ()
    labels: frozenset[str] = frozenset()
    losses: tuple[str, ...] = ()

    @property
    def tensors(self) -> frozenset[str]:
        return frozenset(self.answers) | frozenset(self.probabilities)


def _scope_prefixes(name: str) -> tuple[str, ...]:
    scope = name.rpartition("/")[0]
    return (f"{name}/", f"{scope}/") if scope else (f"{name}/",)


def _model_side(ref: str, loss: str, nodes: dict[str, Any]) -> str:
    """The model's tensor behind a loss operand: the reshapes and casts the loss function added, in its scope,
    walked back."""
    prefixes = _scope_prefixes(loss)
    while True:
        node = nodes.get(node_name(ref))
        if node is None or node.op not in _LOSS_INSERTED_OPS or not node.name.startswith(prefixes):
            return tensor_name(ref)
        ref = node.input[0]


def _feed_behind(ref: str, nodes: dict[str, Any], is_feed: Callable[[Any], bool]) -> str | None:
    """The feed tensor `ref` is, seen through what labels go through; None when it is computed."""
    for _ in range(64):  # a label path is a few ops long; a longer chain is computation
        node = nodes.get(node_name(ref))
        if node is None:
            return None
        if node.op in PLACEHOLDER_OPS:
            return tensor_name(node.name) if is_feed(node) else None
        if node.op in ITERATOR_OUTPUT_OPS:
            return tensor_name(ref)
        data = [r for r in node.input if not r.startswith("^")]
        if node.op in _BRANCH_OPS and len(data) == 2:
            ref = data[1]
        elif node.op in _LABEL_PATH_OPS and data:
            ref = data[0]
        else:
            return None
    return None


def _feeds_of(ref: str, nodes: dict[str, Any], feeds: dict[str, frozenset[str]]) -> frozenset[str]:
    """The feed tensors `ref` is computed from; a tf.data iterator's output is its own feed (`IteratorGetNext:1`)."""
    node = nodes.get(node_name(ref))
    if node is not None and node.op in ITERATOR_OUTPUT_OPS:
        return frozenset({tensor_name(ref)})
    return feeds.get(node_name(ref), frozenset())


def losses(graph_def: GraphDef) -> tuple[str, ...]:
    """The tensors the gradients start from: for each seed `<scope>/grad_ys_<i>` (a Fill of ones), the forward op
    whose gradient reads it, `<scope>/<op>_grad/...`."""
    nodes = {node.name for node in graph_def.node}
    seeds = {node.name: match["scope"] for node in graph_def.node if (match := _GRAD_YS.match(node.name))}
    found: list[str] = []
    for node in graph_def.node:
        for ref in node.input:
            scope = seeds.get(node_name(ref.lstrip("^")))
            if scope is None or not node.name.startswith(scope + "/") or "_grad/" not in node.name:
                continue
            forward = node.name[len(scope) + 1:].split("_grad/", 1)[0]
            if forward in nodes and tensor_name(forward) not in found:
                found.append(tensor_name(forward))
    # An Identity's gradient makes no op of its own: `tf.identity(loss, name=...)` is read by no gradient, so the
    # Identity chain on the op found is the loss too.
    readers: dict[str, list[Any]] = {}
    for node in graph_def.node:
        for ref in node.input:
            if not ref.startswith("^"):
                readers.setdefault(node_name(ref), []).append(node)
    for loss in list(found):
        frontier = [node_name(loss)]
        while frontier:
            for reader in readers.get(frontier.pop(), []):
                if reader.op in ("Identity", "Snapshot") and not _is_training_side(reader) \
                        and tensor_name(reader.name) not in found:
                    found.append(tensor_name(reader.name))
                    frontier.append(reader.name)
    return tuple(found)


def _is_training_side(node: Any) -> bool:
    return bool(_UPDATE_OP.match(node.op)) or any(
        part == "gradients" or part.startswith("gradients_") for part in node.name.split("/"))


def _data_flow(graph_def: GraphDef, order: list[Any], feeds: dict[str, frozenset[str]]
               ) -> tuple[dict[str, frozenset[str]], dict[str, bool]]:
    """Per node, the feeds its values are computed from and whether the weights are among what it is computed from
    (`_weighted`), a tensor's shape (Shape, Size, Rank) counting as neither: a loss reshaping the labels to the
    logits' shape does not compute them from the logits."""
    ops = {node.name: node.op for node in graph_def.node}
    values: dict[str, frozenset[str]] = {}
    for node in order:
        if node.op in _METADATA_OPS:
            values[node.name] = frozenset()
        elif node.op in PLACEHOLDER_OPS or node.op in ITERATOR_OUTPUT_OPS:
            values[node.name] = feeds.get(node.name, frozenset())
        else:
            values[node.name] = frozenset().union(*(
                ({tensor_name(ref)} & feeds.get(node_name(ref), frozenset())) if ops.get(node_name(ref))
                in ITERATOR_OUTPUT_OPS else values.get(node_name(ref), frozenset())
                for ref in node.input if not ref.startswith("^")))
    return values, _weighted(graph_def, order)


def _weighted(graph_def: GraphDef, order: list[Any]) -> dict[str, bool]:
    """Per node, whether it is computed from the weights: variables, or in a graph without any, constants of more
    than one element."""
    has_variables = any(node.op in _VARIABLE_OPS for node in graph_def.node)

    def is_weight(node: Any) -> bool:
        if has_variables:
            return node.op in _VARIABLE_OPS
        if node.op != "Const":
            return False
        dims = [d.size for d in node.attr["value"].tensor.tensor_shape.dim]
        return bool(dims) and all(d > 0 for d in dims) and _product(dims) > 1

    weighted: dict[str, bool] = {}
    for node in order:
        weighted[node.name] = node.op not in _METADATA_OPS and (is_weight(node) or any(
            weighted.get(node_name(ref), False) for ref in node.input if not ref.startswith("^")))
    return weighted


def _product(dims: Iterable[int]) -> int:
    total = 1
    for dim in dims:
        total *= dim
    return total


def _answer_behind(ref: str, meeting: str, nodes: dict[str, Any], feeds: dict[str, frozenset[str]],
                   weighted: dict[str, bool]) -> str:
    """The model's answer behind the operand `ref` of the `meeting` node: what the loss or metric did to it
    (`_ANSWER_TRANSFORMS` with constant operands, casts of class ids and flags, and `_LOSS_INSERTED_OPS` in its own
    scope) walked back."""
    prefixes = _scope_prefixes(meeting)
    for _ in range(64):
        node = nodes.get(node_name(ref))
        if node is None:
            break
        data = [r for r in node.input if not r.startswith("^")]
        if node.op in _FIRST_OPERAND_OPS:
            data = data[:1]  # the rest: a shape, an axis
        computed = [r for r in data if feeds.get(node_name(r))]
        constants = [r for r in data if not feeds.get(node_name(r)) and not weighted.get(node_name(r), False)]
        if len(computed) != 1 or len(computed) + len(constants) != len(data):
            break
        transforms = node.op in _ANSWER_TRANSFORMS or (node.op == "Cast" and node.attr["SrcT"].type in _INTEGER_OR_BOOL)
        if not (transforms or (node.op in _LOSS_INSERTED_OPS and node.name.startswith(prefixes))):
            break
        ref = computed[0]
    return tensor_name(ref)


def _meetings(graph_def: GraphDef, nodes: dict[str, Any], feeds: dict[str, frozenset[str]], seeds: tuple[str, ...]
              ) -> tuple[list[str], set[str]]:
    """The general rule (the module's doc): the answers, in graph order, and the label feeds. The labels are those
    the losses (`seeds`) are computed from; a metric beside them (an accuracy) names an answer where it reads the
    same labels. No loss, no rule: a feed meeting weighted data in a graph that trains nothing is a setting or an
    input as likely as a label."""
    if not seeds:
        return [], set()
    under_loss = reachable(graph_def, [node_name(seed) for seed in seeds], data_only=True)
    order = topological_order(graph_def)
    feeds, weighted = _data_flow(graph_def, order, feeds)
    found: list[tuple[str, frozenset[str], bool]] = []  # (answer, label feeds, whether the losses read it)
    model_inputs: set[str] = set()  # feeds that flow into the weights' ops: never labels
    for node in order:
        if _is_training_side(node):
            continue
        data = [r for r in node.input if not r.startswith("^")]
        sides = [(r, feeds.get(node_name(r), frozenset()), weighted.get(node_name(r), False)) for r in data]
        if any(is_weighted and not used for _, used, is_weighted in sides):  # a weight read with data: a layer
            model_inputs |= set().union(*(used for _, used, _w in sides))
        label_sides = [used for _, used, is_weighted in sides if used and not is_weighted]
        answer_sides = [(r, used) for r, used, is_weighted in sides if used and is_weighted]
        for label in label_sides:
            for ref, used in answer_sides:
                if not used & label:
                    found.append((_answer_behind(ref, node.name, nodes, feeds, weighted), label,
                                  node.name in under_loss))
    answer_feeds = set().union(*(feeds.get(node_name(answer), frozenset()) for answer, _, _ in found))
    not_labels = model_inputs | answer_feeds
    labels = set().union(*(label for _, label, by_loss in found if by_loss and not label & not_labels))
    answers = list(dict.fromkeys(answer for answer, label, _ in found if label <= labels and label))
    return answers, labels


def find_training_heads(graph_def: GraphDef, feeds: dict[str, frozenset[str]],
                        is_feed: Callable[[Any], bool]) -> TrainingHeads:
    """`feeds`: per node, the feed tensors it is computed from (`feed_tensors_by_node`)."""
    nodes = {node.name: node for node in graph_def.node}
    seeds = losses(graph_def)
    answers, label_feeds = _meetings(graph_def, nodes, feeds, seeds)
    if not answers:
        answers, label_feeds = _role_operands(graph_def, nodes, feeds, is_feed)
    model_feeds = set().union(*(_feeds_of(a, nodes, feeds) for a in answers))
    answer_nodes = {node_name(a) for a in answers}
    probabilities = tuple(f"{node.name}:0" for node in graph_def.node if node.op in PROBABILITY_OPS
                          and node.input and node_name(node.input[0]) in answer_nodes)
    return TrainingHeads(answers=tuple(answers), probabilities=probabilities,
                         labels=frozenset(label_feeds - model_feeds), losses=seeds)


def _role_operands(graph_def: GraphDef, nodes: dict[str, Any], feeds: dict[str, frozenset[str]],
                   is_feed: Callable[[Any], bool]) -> tuple[list[str], set[str]]:
    """Where the weights cannot be told from data (a graph of constants): the loss and metric ops whose operands
    have fixed roles, and comparisons of a feed (through what labels go through) with a computed tensor."""
    answers: list[str] = []
    label_feeds: set[str] = set()
    for node in graph_def.node:
        data = [r for r in node.input if not r.startswith("^")]
        if node.op in _ROLE_OPERANDS and len(data) >= 2:
            model_at, label_at = _ROLE_OPERANDS[node.op]
            answer = _model_side(data[model_at], node.name, nodes)
            found = set(_feeds_of(data[label_at], nodes, feeds))
        elif node.op in _COMPARISON_OPS and len(data) == 2:
            sides = [_feed_behind(ref, nodes, is_feed) for ref in data]
            if (sides[0] is None) == (sides[1] is None):
                continue  # both or neither a feed: a comparison inside the model, or of two feeds
            label = sides[0] or sides[1]
            answer = _model_side(data[1] if sides[0] else data[0], node.name, nodes)
            found = {label} if label else set()
        else:
            continue
        answer_feeds = _feeds_of(answer, nodes, feeds)
        if not answer_feeds or answer_feeds & found:
            continue  # a constant, or computed from the labels themselves: no model's answer
        if nodes.get(node_name(answer)) is not None and nodes[node_name(answer)].op == "ArgMax":
            # an accuracy's argmax: the scores it is taken of are the answer (the argmax stays a candidate)
            answer = _model_side(nodes[node_name(answer)].input[0], node.name, nodes)
        if answer not in answers:
            answers.append(answer)
        label_feeds |= found
    return answers, label_feeds
