"""Classifier outputs: do the converted model and TensorFlow pick the same classes, and how often are they right?

An output is taken as a classifier's when it is a float tensor of shape (batch, classes) with classes >= 2. Top-1
agreement is the share of samples whose argmax is the same on both sides; top-k overlap the mean share of the k
best classes the two sides have in common. With labels: the top-1 and top-k accuracy of each side and their
difference (actual - golden), the figure a migration hands in. Ties go to the lower class index on both sides.
A sample that ranks no class above another on a side has no top-1 there: its scores NaN everywhere (NaN ranks
last), or every score that is not NaN the same (a softmax over logits an fp16 overflow made 0 is 1/classes
everywhere; inf everywhere). Ties going to the lower index, an argmax would pick class 0 and "agree" with a
TensorFlow that picks it too: such a sample agrees with nothing and is right about nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


def is_classifier(shape: tuple[int, ...], is_float: bool) -> bool:
    return is_float and len(shape) == 2 and shape[1] >= 2


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """(rows, k) class indices, best first, ties to the lower index; NaN scores rank last.

    A partial sort picks the k best, then those k are ordered: linear in the class count, where a full sort of a
    1000-class output would dominate the whole comparison. Which of several classes tied for the k-th place is
    kept is then up to the partition.
    """
    values = np.asarray(scores, dtype=np.float64)
    classes = values.shape[1]
    if k >= classes:
        return np.argsort(-values, axis=1, kind="stable")
    best = np.argpartition(-values, k - 1, axis=1)[:, :k]
    picked = np.take_along_axis(values, best, axis=1)
    order = np.lexsort((best, -picked), axis=-1)
    return np.take_along_axis(best, order, axis=1)


@dataclass(frozen=True)
class Accuracy:
    golden_top1: float
    actual_top1: float
    golden_topk: float
    actual_topk: float

    @property
    def top1_difference(self) -> float:
        return self.actual_top1 - self.golden_top1

    @property
    def topk_difference(self) -> float:
        return self.actual_topk - self.golden_topk


@dataclass(frozen=True)
class TopKResult:
    k: int
    samples: int
    top1_agreement: float
    topk_overlap: float
    accuracy: Accuracy | None
    without_top1: int = 0  # samples whose converted scores rank no class above another (NaN, one value): no top-1

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"k": self.k, "samples": self.samples, "top1_agreement": self.top1_agreement,
                                    "topk_overlap": self.topk_overlap, "accuracy": None,
                                    "without_top1": self.without_top1}
        if self.accuracy is not None:
            document["accuracy"] = {**asdict(self.accuracy), "top1_difference": self.accuracy.top1_difference,
                                    "topk_difference": self.accuracy.topk_difference}
        return document


class TopKAccumulator:
    """Counts over batches of (rows, classes) scores; labels, when given, are those of the same rows."""

    def __init__(self, k: int, classes: int, *, with_labels: bool) -> None:
        self.k = max(1, min(k, classes))
        self.with_labels = with_labels
        self.samples = 0
        self.without_top1 = 0
        self.top1_agree = 0
        self.overlap = 0
        self.correct = dict.fromkeys(("golden_top1", "actual_top1", "golden_topk", "actual_topk"), 0)

    def add(self, actual: np.ndarray, golden: np.ndarray, labels: np.ndarray | None = None) -> None:
        top_x, top_y = top_indices(actual, self.k), top_indices(golden, self.k)
        # A row that ranks nothing has indices -1 (-2 on TensorFlow's side), which no class and no label equals.
        none_x, none_y = unranked_rows(actual), unranked_rows(golden)
        top_x[none_x], top_y[none_y] = -1, -2
        self.samples += int(top_x.shape[0])
        self.without_top1 += int(np.count_nonzero(none_x))
        self.top1_agree += int(np.count_nonzero(top_x[:, 0] == top_y[:, 0]))
        self.overlap += int(np.count_nonzero(top_x[:, :, None] == top_y[:, None, :]))
        if labels is not None:
            wanted = np.asarray(labels)[:, None]
            self.correct["golden_top1"] += int(np.count_nonzero(top_y[:, 0] == wanted[:, 0]))
            self.correct["actual_top1"] += int(np.count_nonzero(top_x[:, 0] == wanted[:, 0]))
            self.correct["golden_topk"] += int(np.count_nonzero(np.any(top_y == wanted, axis=1)))
            self.correct["actual_topk"] += int(np.count_nonzero(np.any(top_x == wanted, axis=1)))

    def merge(self, other: TopKAccumulator) -> None:
        """Folds in another accumulator's counts (a later shard's), as if its batches had been added here."""
        self.samples += other.samples
        self.without_top1 += other.without_top1
        self.top1_agree += other.top1_agree
        self.overlap += other.overlap
        for key, value in other.correct.items():
            self.correct[key] += value

    def result(self) -> TopKResult:
        n = self.samples
        accuracy = None
        if self.with_labels:
            accuracy = Accuracy(**{key: (value / n if n else 0.0) for key, value in self.correct.items()})
        return TopKResult(k=self.k, samples=n, top1_agreement=self.top1_agree / n if n else 1.0,
                          topk_overlap=self.overlap / (n * self.k) if n else 1.0, accuracy=accuracy,
                          without_top1=self.without_top1)


def unranked_rows(scores: np.ndarray) -> np.ndarray:
    """The rows (samples) that rank no class above another: every score NaN, or two or more scores that are not NaN
    and all the same (exactly: a classifier's honest near-ties differ in their last bits, a collapse does not)."""
    values = np.asarray(scores)
    if values.dtype.kind != "f":
        return np.zeros(values.shape[0], dtype=bool)
    nan = np.isnan(values)
    highest = np.where(nan, -np.inf, values).max(axis=1)
    lowest = np.where(nan, np.inf, values).min(axis=1)
    scored = np.count_nonzero(~nan, axis=1)
    return (scored == 0) | ((scored >= 2) & (highest == lowest))
