"""What a training graph's losses and metrics read: the model's answer (its logits or probabilities) on one side,
the labels on the other.

A training graph's logits are often read by nothing but the loss and an accuracy (`in_top_k`, argmax == label),
so ranking the nodes nothing consumes misses them and offers the loss and the accuracy instead. The loss and
metric ops say, by their operands, which tensor is the model's and which the labels': the feeds on the labels'
side are labels (data inference never has), the tensor on the model's side is what the model answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from binio.graph_types import GraphDef
from binio.names import node_name, tensor_name
from ckpt2pb.graphinfo import ITERATOR_OUTPUT_OPS, PLACEHOLDER_OPS, PROBABILITY_OPS

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
# What a loss function puts between the model's tensor and its own op (softmax_cross_entropy_with_logits_v2
# reshapes to 2-D and casts float16 up), inside its own name scope; an Identity naming the logits is the user's.
_LOSS_INSERTED_OPS = frozenset({"Reshape", "Cast", "ExpandDims", "Squeeze"})


@dataclass(frozen=True)
class TrainingHeads:
    """The tensors the losses and metrics take as the model's answer (logits first met first), the probability
    ops computed from them (a softmax beside the loss), and the feed tensors they take as labels."""

    answers: tuple[str, ...] = ()
    probabilities: tuple[str, ...] = ()
    labels: frozenset[str] = frozenset()

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


def find_training_heads(graph_def: GraphDef, feeds: dict[str, frozenset[str]],
                        is_feed: Callable[[Any], bool]) -> TrainingHeads:
    """`feeds`: per node, the feed tensors it is computed from (`feed_tensors_by_node`)."""
    nodes = {node.name: node for node in graph_def.node}
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
    model_feeds = set().union(*(_feeds_of(a, nodes, feeds) for a in answers))
    answer_nodes = {node_name(a) for a in answers}
    probabilities = tuple(f"{node.name}:0" for node in graph_def.node if node.op in PROBABILITY_OPS
                          and node.input and node_name(node.input[0]) in answer_nodes)
    return TrainingHeads(answers=tuple(answers), probabilities=probabilities,
                         labels=frozenset(label_feeds - model_feeds))
