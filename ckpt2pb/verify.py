"""Runs the original graph (variables restored) and the frozen one on the same seeded inputs and compares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from binio.spec import TensorSpec
from ckpt2pb.errors import VerifyError, tensorflow_reason

FLOAT_TOLERANCE = 1e-5  # relative to max(1, |reference|): what reordering of fp32 arithmetic may change


@dataclass(frozen=True)
class Verification:
    """The largest difference per output between the original and the frozen graph."""

    seed: int
    max_abs_diff: dict[str, float]
    tolerance: float

    @property
    def worst(self) -> float:
        return max(self.max_abs_diff.values(), default=0.0)

    def __bool__(self) -> bool:
        return self.worst <= self.tolerance


def seeded_inputs(specs: tuple[TensorSpec, ...], seed: int) -> dict[str, np.ndarray]:
    """Standard-normal floats; integers 0 or 1 (valid ids, masks and segment ids for any vocabulary)."""
    rng = np.random.default_rng(seed)
    values: dict[str, np.ndarray] = {}
    for spec in specs:
        shape = spec.static_shape()
        if spec.dt.is_float:
            values[spec.name] = rng.standard_normal(shape).astype(spec.dt.numpy)
        elif spec.dt.is_bool:
            values[spec.name] = rng.random(shape) < 0.5
        else:
            values[spec.name] = rng.integers(0, 2, shape).astype(spec.dt.numpy)
    return values


def verify_frozen(session: Any, frozen_graph: Any, original_inputs: tuple[TensorSpec, ...],
                  frozen_inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
                  fixed_feeds: Mapping[str, np.ndarray], *, seed: int = 0) -> Verification:
    """Feeds the original tensors (placeholders or not: TF1 feeds any tensor) and the frozen placeholders the
    same arrays; refuses a difference beyond tolerance, naming the output."""
    import tensorflow as tf

    values = seeded_inputs(original_inputs, seed)
    feeds = {**dict(fixed_feeds), **values}
    names = [spec.name for spec in outputs]
    frozen_feeds = {new.name: values[old.name] for old, new in zip(original_inputs, frozen_inputs, strict=True)}
    try:
        which = "original"
        expected = session.run(names, feeds)
        which = "frozen"
        with tf.compat.v1.Session(graph=frozen_graph) as frozen_session:
            got = frozen_session.run(names, frozen_feeds)
    except tf.errors.OpError as exc:
        shapes = ", ".join(spec.describe() for spec in original_inputs)
        raise VerifyError(f"the {which} graph fails on seeded inputs {shapes}: {tensorflow_reason(exc.message)}",
                          hint="the pinned shapes may not fit the graph (check --batch and --inputs); --no-verify "
                               "skips this check") from None
    diffs: dict[str, float] = {}
    for spec, want, have in zip(outputs, expected, got, strict=True):
        want, have = np.asarray(want), np.asarray(have)
        if want.shape != have.shape:
            raise VerifyError(f"output {spec.name}: frozen graph gives shape {have.shape}, original {want.shape}")
        diff = float(np.max(np.abs(want.astype(np.float64) - have.astype(np.float64)))) if want.size else 0.0
        diffs[spec.name] = diff
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size and spec.dt.is_float else 1.0
        limit = FLOAT_TOLERANCE * scale if spec.dt.is_float else 0.0
        if not diff <= limit:
            raise VerifyError(
                f"output {spec.name}: frozen graph differs from the checkpoint's by {diff:.3g} (tolerance {limit:.3g})",
                hint="a --set value or a folded default may switch the model into another mode; --no-verify skips "
                     "this check",
            )
    return Verification(seed=seed, max_abs_diff=diffs, tolerance=FLOAT_TOLERANCE)
