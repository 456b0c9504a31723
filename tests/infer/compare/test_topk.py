"""Top-1 agreement, top-k overlap and accuracy against labels, on scores worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infer.compare._judge.labels import read_labels
from infer.compare._judge.topk import TopKAccumulator, top_indices
from infer.compare.errors import LabelsError

GOLDEN = np.array([[0.1, 0.5, 0.2, 0.9],    # order 3, 1, 2, 0
                   [0.4, 0.3, 0.2, 0.1]])   # order 0, 1, 2, 3
ACTUAL = np.array([[0.1, 0.95, 0.2, 0.9],   # order 1, 3, 2, 0: top-1 differs, top-2 the same set
                   [0.4, 0.1, 0.3, 0.2]])   # order 0, 2, 3, 1: top-1 same, top-2 shares one class


def test_top_indices_partial_and_full_agree() -> None:
    scores = np.random.default_rng(0).random((6, 50))
    full = np.argsort(-scores, axis=1, kind="stable")
    for k in (1, 3, 50):
        assert np.array_equal(top_indices(scores, k), full[:, :k])


def test_ties_go_to_the_lower_index() -> None:
    assert top_indices(np.array([[1.0, 3.0, 3.0, 0.0]]), 2).tolist() == [[1, 2]]
    assert top_indices(np.array([[3.0, 1.0, 3.0, 3.0]]), 1).tolist() == [[0]]


def test_agreement_and_overlap_by_hand() -> None:
    accumulator = TopKAccumulator(2, 4, with_labels=False)
    accumulator.add(ACTUAL[:1], GOLDEN[:1])
    accumulator.add(ACTUAL[1:], GOLDEN[1:])
    result = accumulator.result()
    assert result.top1_agreement == 0.5
    assert result.topk_overlap == pytest.approx((2 / 2 + 1 / 2) / 2)
    assert result.accuracy is None


def test_accuracy_by_hand() -> None:
    accumulator = TopKAccumulator(2, 4, with_labels=True)
    accumulator.add(ACTUAL, GOLDEN, np.array([3, 2]))
    accuracy = accumulator.result().accuracy
    assert accuracy is not None
    # golden: top-1 3 (right), 0 (wrong); top-2 {3,1} right, {0,1} wrong. actual: top-1 1, 0 (both wrong);
    # top-2 {1,3} right, {0,2} right.
    assert (accuracy.golden_top1, accuracy.actual_top1) == (0.5, 0.0)
    assert (accuracy.golden_topk, accuracy.actual_topk) == (0.5, 1.0)
    assert accuracy.top1_difference == -0.5 and accuracy.topk_difference == 0.5


def test_k_is_capped_at_the_class_count() -> None:
    assert TopKAccumulator(5, 4, with_labels=False).k == 4


def test_labels_from_text_and_npy(tmp_path: Path) -> None:
    (tmp_path / "labels.txt").write_text("3\n\n1\n7\n")
    assert read_labels(tmp_path / "labels.txt").labels.tolist() == [3, 1, 7]
    (tmp_path / "named.txt").write_text("a.jpg 3\n\nmy photo.jpg 1\n")
    named = read_labels(tmp_path / "named.txt")
    assert (named.names, named.labels.tolist(), named.lines) == (("a.jpg", "my photo.jpg"), [3, 1], (1, 3))
    np.save(tmp_path / "labels.npy", np.array([[2], [0]], dtype=np.int32))
    assert read_labels(tmp_path / "labels.npy").labels.tolist() == [2, 0]


def test_bad_labels(tmp_path: Path) -> None:
    (tmp_path / "labels.txt").write_text("3\ncat\n")
    with pytest.raises(LabelsError, match=r"labels.txt:2: expected an integer class label, found 'cat'"):
        read_labels(tmp_path / "labels.txt")
    np.save(tmp_path / "labels.npy", np.array([0.5, 1.0]))
    with pytest.raises(LabelsError, match="expected integer class labels, found dtype float64"):
        read_labels(tmp_path / "labels.npy")
    with pytest.raises(LabelsError, match="no such labels file"):
        read_labels(tmp_path / "missing.txt")
