"""Pairs of arrays (actual, golden) that exercise every branch of the ten metrics, for holding infer's numbers to
msaccucmp's own code (tests/infer/compare/test_msaccucmp_metrics.py).

The kinds the comparison must cover: random data near and far apart, constants, all zeros on either side, NaN
and inf, fp16-rounded values, int32, int64 (ids above 2^24 too), bool masks, tiny (1e-20) and huge (1e20)
magnitudes, shapes whose dims are all 1, and empty tensors. Each pair is made from a seeded generator: the same
arrays on every run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArrayPair:
    name: str
    kind: str
    actual: np.ndarray
    golden: np.ndarray


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _normal(seed: int, shape: tuple[int, ...] = (1000,), scale: float = 1.0) -> np.ndarray:
    return (_rng(seed).normal(size=shape) * scale).astype(np.float32)


def _noisy(golden: np.ndarray, seed: int, relative: float) -> np.ndarray:
    noise = _rng(seed).normal(size=golden.shape) * relative * float(np.max(np.abs(golden)))
    return (golden.astype(np.float64) + noise).astype(golden.dtype)


def _with(array: np.ndarray, index: int, value: float) -> np.ndarray:
    changed = array.copy()
    changed.flat[index] = value
    return changed


def _relu(array: np.ndarray) -> np.ndarray:
    return np.maximum(array, 0).astype(array.dtype)


def _pairs() -> list[ArrayPair]:
    pairs: list[tuple[str, str, np.ndarray, np.ndarray]] = []

    def add(name: str, kind: str, actual: np.ndarray, golden: np.ndarray) -> None:
        pairs.append((name, kind, np.asarray(actual), np.asarray(golden)))

    y = _normal(1)
    add("normal, 1e-3 noise", "random", _noisy(y, 2, 1e-3), y)
    add("normal, 0.3 noise", "random", _noisy(y, 3, 0.3), y)
    add("normal, independent", "random", _normal(4), y)
    add("normal, negated", "random", -y, y)
    add("normal, scaled by 2", "random", 2 * y, y)
    add("normal, shifted by 0.1", "random", y + np.float32(0.1), y)
    positive = _rng(5).uniform(0.5, 2.0, 1000).astype(np.float32)
    add("uniform positive, 1e-2 noise", "random", _noisy(positive, 6, 1e-2), positive)
    cube = _normal(7, (2, 3, 4, 5))
    add("4-d normal, 1e-2 noise", "random", _noisy(cube, 8, 1e-2), cube)
    wide = _normal(9, (100_000,))
    add("100k normal, 1e-4 noise", "random", _noisy(wide, 10, 1e-4), wide)
    logits = _normal(11, (16, 10), 4.0)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    add("softmax, 1e-3 noise", "random", np.abs(_noisy(probs, 12, 1e-3)), probs)
    add("float64 normal, 1e-6 noise", "random", _noisy(y.astype(np.float64), 13, 1e-6), y.astype(np.float64))

    add("relu vs relu with noise", "zeros", _relu(_noisy(y, 14, 0.05)), _relu(y))
    add("dense actual vs relu golden", "zeros", _noisy(y, 15, 0.05), _relu(y))
    add("relu actual vs dense golden", "zeros", _relu(y), y)
    zeros = np.zeros(1000, dtype=np.float32)
    add("both all zero", "zeros", zeros, zeros)
    add("actual all zero", "zeros", zeros, y)
    add("golden all zero", "zeros", y, zeros)
    add("golden all zero, actual tiny", "zeros", np.full(1000, 1e-9, np.float32), zeros)

    add("constant equal", "constant", np.full(64, 3.0, np.float32), np.full(64, 3.0, np.float32))
    add("constant apart", "constant", np.full(64, 3.001, np.float32), np.full(64, 3.0, np.float32))
    add("constant negative", "constant", np.full(64, -2.0, np.float32), np.full(64, -2.0, np.float32))
    add("constant actual vs random", "constant", np.full(1000, 0.5, np.float32), y)
    add("random actual vs constant", "constant", y, np.full(1000, 0.5, np.float32))

    add("NaN in actual", "nonfinite", _with(y, 10, np.nan), y)
    add("NaN in golden", "nonfinite", y, _with(y, 10, np.nan))
    add("NaN in both", "nonfinite", _with(y, 3, np.nan), _with(y, 3, np.nan))
    add("inf in actual", "nonfinite", _with(y, 10, np.inf), y)
    add("inf in golden", "nonfinite", y, _with(y, 10, np.inf))
    add("-inf in actual", "nonfinite", _with(y, 10, -np.inf), y)
    add("inf in both, same place", "nonfinite", _with(y, 10, np.inf), _with(y, 10, np.inf))

    add("fp16 rounding of normal", "fp16", y.astype(np.float16), y)
    big = _normal(16, scale=300.0)
    add("fp16 rounding of normal x300", "fp16", big.astype(np.float16), big)
    add("fp16 both, 1e-2 noise", "fp16", _noisy(y, 17, 1e-2).astype(np.float16), y.astype(np.float16))
    add("fp16 overflow to inf", "fp16", np.array([1.0, 2.0, np.inf, 3.0], np.float16),
        np.array([1.0, 2.0, 7e4, 3.0], np.float32))

    ints = _rng(18).integers(-50, 50, 1000).astype(np.int32)
    add("int32, off by one here and there", "int32", ints + (_rng(19).random(1000) < 0.1).astype(np.int32), ints)
    labels = _rng(20).integers(0, 10, 200).astype(np.int32)
    add("int32 class labels, 5% differ", "int32", np.where(_rng(21).random(200) < 0.05, (labels + 1) % 10, labels)
        .astype(np.int32), labels)
    large = _rng(22).integers(1_000_000, 2_000_000, 500).astype(np.int32)
    add("int32 around 1e6, off by 3", "int32", large + 3, large)
    add("int32 with zeros in golden", "int32", _relu(ints) + 1, _relu(ints))

    tiny = _normal(23, scale=1e-20)
    add("tiny, 1e-3 noise", "tiny", _noisy(tiny, 24, 1e-3), tiny)
    add("tiny, negated", "tiny", -tiny, tiny)
    add("tiny golden, normal actual", "tiny", y, tiny)
    add("normal golden, tiny actual", "tiny", tiny, y)

    huge = _normal(25, scale=1e20)
    add("huge 1e20, 1e-3 noise", "huge", _noisy(huge, 26, 1e-3), huge)
    add("huge 1e20, negated", "huge", -huge, huge)
    large_f = _normal(27, scale=1e15)
    add("large 1e15, 1e-3 noise", "huge", _noisy(large_f, 28, 1e-3), large_f)

    add("shape (1,), same sign", "ones shape", np.array([2.0], np.float32), np.array([3.0], np.float32))
    add("shape (1,1,1,1), opposite sign", "ones shape", np.full((1, 1, 1, 1), -1.0, np.float32),
        np.full((1, 1, 1, 1), 1.0, np.float32))
    add("shape (), opposite sign", "ones shape", np.array(-4.0, np.float32), np.array(4.0, np.float32))
    add("shape (1,1), actual zero", "ones shape", np.zeros((1, 1), np.float32), np.full((1, 1), 5.0, np.float32))

    mask = _rng(29).random(300) < 0.4
    add("bool masks, 10% flipped", "bool", mask ^ (_rng(30).random(300) < 0.1), mask)
    add("bool masks, equal", "bool", mask.copy(), mask)
    ids = _rng(31).integers(2**40, 2**41, 200).astype(np.int64)
    add("int64 ids above 2^24, off by one", "int64", ids + 1, ids)
    add("int64 ids above 2^24, equal", "int64", ids.copy(), ids)
    add("int64 below 2^24, off by one here and there", "int64",
        ints.astype(np.int64) + (_rng(32).random(1000) < 0.1), ints.astype(np.int64))

    add("empty (0,)", "empty", np.zeros(0, np.float32), np.zeros(0, np.float32))
    add("empty (2,0,3)", "empty", np.zeros((2, 0, 3), np.float32), np.zeros((2, 0, 3), np.float32))
    return [ArrayPair(name, kind, actual, golden) for name, kind, actual, golden in pairs]


PAIRS: tuple[ArrayPair, ...] = tuple(_pairs())
