"""Top-1 agreement, top-k overlap and accuracy against labels, on scores worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infer.compare._judge.labels import read_labels
from infer.compare._judge.topk import TopKAccumulator, top_indices, unranked_rows
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


def test_a_sample_nan_everywhere_has_no_top1() -> None:
    """An all-NaN output once showed "top-1 agreement 100%": its NaN scores ranked class 0 first, as TensorFlow's
    did. A row NaN everywhere agrees with nothing and is right about nothing; a row with one NaN still ranks."""
    golden = np.array([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05], [0.1, 0.8, 0.1]])
    actual = np.array([[np.nan] * 3, [np.nan] * 3, [0.1, np.nan, 0.2]])
    accumulator = TopKAccumulator(2, 3, with_labels=True)
    accumulator.add(actual, golden, labels=np.array([0, 0, 2]))
    result = accumulator.result()
    assert result.without_top1 == 2
    assert result.top1_agreement == 0.0  # the third: NaN ranks last, so its top-1 is class 2, TF's is 1
    assert result.topk_overlap == pytest.approx(1 / 6)  # the third's top-2 (2, 0) shares class 0 with TF's (1, 0)
    assert result.accuracy is not None and result.accuracy.actual_top1 == pytest.approx(1 / 3)
    assert result.accuracy.golden_top1 == pytest.approx(2 / 3)


def test_a_sample_whose_scores_are_all_the_same_has_no_top1() -> None:
    """A softmax over logits an fp16 overflow made 0 is 1/classes everywhere, and inf everywhere ranks nothing
    either: ties go to the lower index, so either would "agree" with a TensorFlow that picks class 0. A row with one
    score and NaN elsewhere still ranks it first; honest near-ties differ in their last bits and rank."""
    golden = np.array([[0.7, 0.2, 0.1]] * 5, dtype=np.float32)
    actual = np.array([[1 / 3] * 3, [np.inf] * 3, [np.nan, 0.5, 0.5], [np.nan, np.nan, 0.4],
                       [0.3333334, 0.3333333, 0.3333333]], dtype=np.float32)
    assert unranked_rows(actual).tolist() == [True, True, True, False, False]
    accumulator = TopKAccumulator(1, 3, with_labels=True)
    accumulator.add(actual, golden, labels=np.zeros(5, dtype=np.int64))
    result = accumulator.result()
    assert result.without_top1 == 3
    assert result.top1_agreement == pytest.approx(1 / 5)  # only the near-tie, whose class 0 is just above
    assert result.accuracy is not None and result.accuracy.actual_top1 == pytest.approx(1 / 5)
    assert result.accuracy.golden_top1 == 1.0


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
