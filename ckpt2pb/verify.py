"""Runs the original graph (variables restored) and the frozen one on the same seeded inputs and compares."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from binio.memory import check_fits
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


def session_config() -> Any:
    """The configuration of both sessions verification runs, the original and the frozen graph's: Grappler off,
    and the session's own graph optimiser at L0.

    In a frozen graph every weight is a constant, and Grappler copies the whole GraphDef several times over while
    it optimises it: verifying a model with 192 MiB of weights took 1.8 GiB more at its peak than freezing it
    without verification. The session's optimiser (constant folding and common-subexpression elimination, on by
    default) then folds every Identity of a weight into one more copy and hashes each constant: 1.7 s of the 2.2 s
    the frozen graph's first run took on that model. Off in both sessions, both graphs run the same (unfused)
    kernels, as they ran the same fused ones before.
    """
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    return config


def check_verification_memory(graph: Any, nodes: set[str], specs: tuple[TensorSpec, ...],
                              outputs: tuple[str, ...]) -> None:
    """Refuses a verification that cannot fit in memory, counting what it holds at once: the seeded inputs (drawn
    as float64), the largest tensor the run computes (with its op's input beside it), the original's outputs kept
    for the comparison, the frozen graph's, and the float64 copies their difference is taken in. A dim the graph
    leaves unknown is the verification batch on the first axis and not counted elsewhere (the estimate is low then,
    never high)."""
    batch = next((s.static_shape()[0] for s in specs if s.shape), 1)

    def size(tensor: Any) -> int:
        if tensor.shape.rank is None or not tensor.dtype.is_numpy_compatible or tensor.dtype.size == 0:
            return 0
        dims = [batch if d is None and axis == 0 else d for axis, d in enumerate(tensor.shape.as_list())]
        return 0 if None in dims else math.prod(dims) * tensor.dtype.size

    largest = max((size(t) for op in graph.get_operations() if op.name in nodes for t in op.outputs), default=0)
    kept = sum(size(graph.get_tensor_by_name(name)) for name in outputs)
    seeded = sum(math.prod(s.static_shape()) * (s.dt.itemsize + (8 if s.dt.is_float else 1)) for s in specs)
    needed = seeded + 2 * largest + 2 * kept + 3 * 8 * kept // 4  # the float64 copies of float32 outputs
    check_fits(needed, "verifying the frozen graph on seeded inputs " + ", ".join(s.describe() for s in specs) +
               f" (its largest tensor {largest:,} bytes)", hint="a smaller --batch, or --no-verify")


def seeded_inputs(specs: tuple[TensorSpec, ...], seed: int) -> dict[str, np.ndarray]:
    """Standard-normal floats; integers 0 or 1 (valid ids, masks and segment ids for any vocabulary)."""
    # Floats are drawn as float64 and then cast: both arrays exist for a moment.
    needed = sum(math.prod(s.static_shape()) * (s.dt.itemsize + (8 if s.dt.is_float else 1)) for s in specs)
    check_fits(needed, "verifying the frozen graph on seeded inputs " + ", ".join(s.describe() for s in specs),
               hint="a smaller --batch, or --no-verify")
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


@dataclass(frozen=True)
class Reference:
    """The original graph's outputs on the seeded inputs: what the frozen graph must reproduce."""

    inputs: dict[str, np.ndarray]  # by the original graph's tensor names
    outputs: list[np.ndarray]


def _failed(which: str, exc: Any, original_inputs: tuple[TensorSpec, ...]) -> VerifyError:
    shapes = ", ".join(spec.describe() for spec in original_inputs)
    return VerifyError(f"the {which} graph fails on seeded inputs {shapes}: {tensorflow_reason(exc.message)}",
                       hint="the pinned shapes may not fit the graph (check --batch and --inputs); --no-verify "
                            "skips this check")


def run_original(session: Any, original_inputs: tuple[TensorSpec, ...], outputs: tuple[str, ...],
                 fixed_feeds: Mapping[str, np.ndarray], *, seed: int = 0) -> Reference:
    """The original graph (variables restored in `session`) on seeded inputs. TF1 feeds any tensor, placeholder or
    not. Taken before the frozen graph is loaded, so that the session (a copy of every weight) can be closed first."""
    import tensorflow as tf

    values = seeded_inputs(original_inputs, seed)
    try:
        expected = session.run(list(outputs), {**dict(fixed_feeds), **values})
    except tf.errors.OpError as exc:
        raise _failed("original", exc, original_inputs) from None
    return Reference(inputs=values, outputs=list(expected))


def check_frozen(frozen_graph: Any, reference: Reference, original_inputs: tuple[TensorSpec, ...],
                 frozen_inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...], *,
                 seed: int = 0) -> Verification:
    """Feeds the frozen placeholders the reference's inputs; refuses a difference beyond tolerance, naming the
    output."""
    import tensorflow as tf

    names = [spec.name for spec in outputs]
    frozen_feeds = {new.name: reference.inputs[old.name]
                    for old, new in zip(original_inputs, frozen_inputs, strict=True)}
    try:
        with tf.compat.v1.Session(graph=frozen_graph, config=session_config()) as frozen_session:
            got = frozen_session.run(names, frozen_feeds)
    except tf.errors.OpError as exc:
        raise _failed("frozen", exc, original_inputs) from None
    diffs: dict[str, float] = {}
    for spec, want, have in zip(outputs, reference.outputs, got, strict=True):
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

