"""From per-tensor comparisons to a diagnosis: where the error is introduced, where it grows most, and a mark
that agrees with the verdict.

The first diverging tensor is the first in graph order that fails while every compared tensor it depends on
passes: the place where an error enters, not merely the first failure in a list (a failure downstream of a failing
tensor inherits its error). Several such tensors (independent branches) are all listed as origins.
The error of a tensor is its RelativeEuclideanDistance; its growth is that error over the largest error of the
compared tensors it reads (nearest upstream), floored at fp32's rounding so that exact inputs do not divide by 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from infer.compare._layer_match import tf_frontier
from infer.compare.layer_result import LayerRow
from infer.compare.result import CompareResult
from infer.compare.thresholds import Thresholds

# Only scale-free measures judge an intermediate tensor: an absolute one (msit's RMSE > 1) marks a correct fp32
# exp whose values are in the thousands, and fp16 tensors in models that pass.
LAYER_METRICS: tuple[str, ...] = ("CosineSimilarity", "RelativeEuclideanDistance")
ERROR_FLOOR = 1e-6  # RED of a tensor that only fp32 rounding separates from TF's


def layer_thresholds(thresholds: Thresholds) -> Thresholds:
    """The thresholds in force, restricted to the relative measures that judge intermediate tensors."""
    return Thresholds(settings=tuple(s for s in thresholds.settings if s.metric in LAYER_METRICS),
                      defaults={k: v for k, v in thresholds.defaults.items() if k in LAYER_METRICS})


def _error(row: LayerRow) -> float:
    if row.metrics is None:
        return math.nan
    value = row.metrics.relative_euclidean_distance
    return math.inf if math.isnan(value) else value


def diagnose(rows: Sequence[LayerRow], inputs_of: Mapping[str, tuple[str, ...]]) -> tuple[
        tuple[LayerRow, ...], tuple[str, ...], str]:
    """The rows with the first diverging tensor marked and each one's error growth; the origins; the tensor where
    the error grows most."""
    compared = {row.tensor for row in rows if row.matched}
    failing = {row.tensor for row in rows if row.matched and row.failures}
    tainted: dict[str, bool] = {}  # some compared tensor upstream fails

    def has_failing_upstream(name: str) -> bool:
        pending, seen = list(inputs_of.get(name, ())), set()
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in failing or tainted.get(current, False):
                return True
            if current not in tainted and current in inputs_of:
                pending.extend(inputs_of[current])
        return False

    by_name = {row.tensor: row for row in rows}
    origins = []
    result = []
    best, best_growth = "", 0.0
    for row in rows:
        tainted[row.tensor] = has_failing_upstream(row.tensor)
        if not row.matched:
            result.append(row)
            continue
        upstream = tf_frontier(row.tensor, inputs_of, compared)
        base = max((_error(by_name[name]) for name in upstream if name in by_name), default=0.0)
        error = _error(row)
        growth = error / max(base, ERROR_FLOOR) if error > ERROR_FLOOR else 1.0
        if math.isnan(growth):  # inf over inf: the error arrived already infinite
            growth = 1.0
        if growth > best_growth and error > ERROR_FLOOR:
            best, best_growth = row.tensor, growth
        if row.failures and not tainted[row.tensor]:
            origins.append(row.tensor)
        result.append(replace(row, error_growth=growth, upstream_error=base,
                              first_failing=origins[:1] == [row.tensor]))
    return tuple(result), tuple(origins), best


def verdict_note(first: LayerRow | None, outcome: CompareResult | None, rows: Sequence[LayerRow], stem: str) -> str:
    """What makes the layer-wise mark agree with the verdict: a warning when a tensor diverges while the outputs
    pass; the reason when the outputs fail and no tensor is marked."""
    if outcome is None:
        return ""
    if first is not None:
        if outcome.passed:
            limits = "; ".join(f.describe() for f in first.failures)
            return (f"warning: the outputs pass, but {first.tensor} ({first.op_type}) diverges on batch {stem} "
                    f"({limits}): a layer whose damage the outputs hide")
        return ""
    if outcome.passed:
        return ""
    by_name = {row.tensor: row for row in rows}
    reasons = []
    for output in outcome.outputs:
        if output.passed:
            continue
        row = by_name.get(output.name)
        metrics = sorted({f.metric for f in output.failures})
        if row is None or not row.matched:
            why = row.unmatched_reason if row is not None else "not among the tensors compared"
            reasons.append(f"{output.name} fails ({', '.join(metrics)}) but cannot be compared layer by layer "
                           f"({why})")
        elif not set(metrics) & set(LAYER_METRICS):
            reasons.append(f"{output.name} fails only on {', '.join(metrics)}, which the layer-wise view does not "
                           f"judge (it uses {', '.join(LAYER_METRICS)}, measures that do not depend on scale)")
        else:
            reasons.append(f"{output.name} passes on batch {stem}: its failure lies in other batches or in their "
                           "aggregate")
    if not reasons:  # the outputs pass dataset-wide: a check asked to fail the run did (per sample, the band)
        reasons.append(f"the run fails on {'; '.join(outcome.fail_reasons)}, and no compared tensor of batch {stem} "
                       f"breaks a limit on {', '.join(LAYER_METRICS)}")
    return "no tensor marked: " + "; ".join(reasons)
