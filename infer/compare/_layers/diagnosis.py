"""From per-tensor comparisons to a diagnosis: where the error is introduced, where it grows most, and a mark
that agrees with the verdict.

Judged by the expected-error band (`infer.compare._layers.bands`, wherever it was computed): a tensor is out when its
RED passes its band by the factor. The first out of its band while every compared tensor it depends on stays inside
its own is where the damage shows; the mark goes, along the chain of raised tensors (excess above `RAISED`) that
leads to it, to the one whose excess jumps most over its inputs' (its error's growth over what its precision's
growth explains): a layer damaged by a few percent, whose own excess stays under the factor, is named there rather
than where its error, carried on and grown, finally crosses it. msit's limits still mark each row that breaks them,
but do not place the mark: a healthy deep fp16 network past RED 0.05 is within its band.

Without a band (tune-precision's seeds, a dump compared where the stand-in cannot run), by msit's limits: the first
tensor in graph order that fails while every compared tensor it depends on passes (a failure downstream of a failing
tensor inherits its error). Several such tensors (independent branches) are all listed as origins.
The error of a tensor is its RelativeEuclideanDistance; its growth is that error over the largest error of the
compared tensors it reads (nearest upstream), floored at fp32's rounding so that exact inputs do not divide by 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from infer.compare._layers.bands import RAISED, LayerBands, excess
from infer.compare._layers.match import tf_frontier
from infer.compare.layer_result import ERROR_FLOOR, LayerRow
from infer.compare.metric_names import shown
from infer.compare.result import CompareResult
from infer.compare.thresholds import Thresholds

# Only scale-free measures judge an intermediate tensor: an absolute one (msit's RMSE > 1) marks a correct fp32
# exp whose values are in the thousands, and fp16 tensors in models that pass.
LAYER_METRICS: tuple[str, ...] = ("CosineSimilarity", "RelativeEuclideanDistance")


def layer_thresholds(thresholds: Thresholds) -> Thresholds:
    """The thresholds in force, restricted to the relative measures that judge intermediate tensors."""
    return Thresholds(settings=tuple(s for s in thresholds.settings if s.metric in LAYER_METRICS),
                      defaults={k: v for k, v in thresholds.defaults.items() if k in LAYER_METRICS})


def _error(row: LayerRow) -> float:
    if row.metrics is None:
        return math.nan
    value = row.metrics.relative_euclidean_distance
    return math.inf if math.isnan(value) else value


def _first_out(rows: Sequence[LayerRow], inputs_of: Mapping[str, tuple[str, ...]], out: set[str]) -> list[str]:
    """Every tensor of `out` that no tensor of `out` lies upstream of, in graph order."""
    tainted: dict[str, bool] = {}  # some tensor of `out` lies upstream

    def reaches(name: str) -> bool:
        pending, seen = list(inputs_of.get(name, ())), set()
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in out or tainted.get(current, False):
                return True
            if current not in tainted and current in inputs_of:
                pending.extend(inputs_of[current])
        return False

    found = []
    for row in rows:
        tainted[row.tensor] = reaches(row.tensor)
        if row.tensor in out and not tainted[row.tensor]:
            found.append(row.tensor)
    return found


def diagnose(rows: Sequence[LayerRow], inputs_of: Mapping[str, tuple[str, ...]],
             bands: LayerBands | None = None, *, outputs_fail: bool = False) -> tuple[
                 tuple[LayerRow, ...], tuple[str, ...], str]:
    """The rows with the first diverging tensor marked, each one's error growth (and, with `bands`, its band and
    excess); the origins; the tensor where the error grows most. `outputs_fail`: the verdict fails the outputs; where
    every tensor is within its band, the mark then goes by msit's limits (the first failing tensor whose compared
    upstream passes: where the precision itself breaks them, for tune-precision to keep in fp32)."""
    compared = {row.tensor for row in rows if row.matched}
    by_name = {row.tensor: row for row in rows}
    ratios = {row.tensor: excess(_error(row), bands.band(row.tensor)) for row in rows
              if row.matched and bands is not None}
    judged = bands is not None and any(not math.isnan(r) for r in ratios.values())
    factor = bands.factor if bands is not None else math.inf
    failing = {row.tensor for row in rows if row.matched and row.failures}
    # Out: past its band by the factor (a tensor the emulation has no value for: by msit's limits).
    out = {row.tensor for row in rows if row.matched and (
        ratios[row.tensor] > factor if judged and not math.isnan(ratios[row.tensor]) else bool(row.failures))} \
        if judged else failing
    frontiers = {row.tensor: tf_frontier(row.tensor, inputs_of, compared) for row in rows if row.matched}
    result = []
    best, best_growth = "", 0.0
    for row in rows:
        if not row.matched:
            result.append(row)
            continue
        upstream = frontiers[row.tensor]
        base = max((_error(by_name[name]) for name in upstream if name in by_name), default=0.0)
        error = _error(row)
        growth = error / max(base, ERROR_FLOOR) if error > ERROR_FLOOR else 1.0
        if math.isnan(growth):  # inf over inf: the error arrived already infinite
            growth = 1.0
        if growth > best_growth and error > ERROR_FLOOR:
            best, best_growth = row.tensor, growth
        band = bands.band(row.tensor) if judged and bands is not None else math.nan
        result.append(replace(row, error_growth=growth, upstream_error=base, band=band,
                              band_excess=ratios.get(row.tensor, math.nan) if judged else math.nan,
                              excess_jump=_jump(row.tensor, ratios, frontiers) if judged else math.nan))
    strict = _first_out(rows, inputs_of, out)
    origins = _jump_points(strict, ratios, frontiers) if judged else strict
    if judged and not origins and outputs_fail:
        origins = _first_out(rows, inputs_of, failing)
    marked = origins[:1]
    return tuple(replace(r, diverges_here=r.tensor in marked) if r.matched else r for r in result), \
        tuple(origins), best


def _jump(tensor: str, ratios: Mapping[str, float], frontiers: Mapping[str, frozenset[str]]) -> float:
    """The tensor's excess over the largest excess of the compared tensors it reads (at least 1: an input better
    than its band explains nothing)."""
    inputs = [ratios[name] for name in frontiers.get(tensor, ()) if not math.isnan(ratios.get(name, math.nan))]
    own = ratios.get(tensor, math.nan)
    if math.isnan(own):
        return math.nan
    base = max([1.0, *inputs])
    return 1.0 if math.isinf(own) and math.isinf(base) else own / base


def _jump_points(strict: Sequence[str], ratios: Mapping[str, float],
                 frontiers: Mapping[str, frozenset[str]]) -> list[str]:
    """For each tensor first out of its band, the tensor where its error jumps: along the chain of raised tensors
    (excess above RAISED) leading to it, the largest jump, the earliest on a tie. In graph order, each once."""
    order = {name: index for index, name in enumerate(ratios)}
    found: set[str] = set()
    for origin in strict:
        chain, pending = {origin}, [origin]
        while pending:
            for name in frontiers.get(pending.pop(), ()):
                ratio = ratios.get(name, math.nan)
                if name not in chain and not math.isnan(ratio) and ratio > RAISED:
                    chain.add(name)
                    pending.append(name)
        jumps = {name: _jump(name, ratios, frontiers) for name in chain}
        found.add(max(sorted(chain, key=order.__getitem__),
                      key=lambda name: -math.inf if math.isnan(jumps[name]) else jumps[name]))
    return sorted(found, key=order.__getitem__)


def band_description(row: LayerRow, bands: LayerBands) -> str:
    """``RED 0.026, 2.6e+04x its band of 1e-06 (what force_fp32 explains), 2.6e+04x its inputs'``."""
    if row.metrics is None or not row.has_band:
        return ""
    mode = bands.precision_mode or "its precision"
    return (f"RED {shown(row.metrics.relative_euclidean_distance)}, {row.band_excess:.3g}x its band of "
            f"{shown(row.band)} (what {mode} explains), {row.excess_jump:.3g}x its inputs'")


def verdict_note(first: LayerRow | None, outcome: CompareResult | None, rows: Sequence[LayerRow], stem: str,
                 bands: LayerBands | None = None) -> str:
    """What makes the layer-wise mark agree with the verdict: a warning when a tensor diverges while the outputs
    pass; the reason when the outputs fail and no tensor is marked."""
    if outcome is None:
        return ""
    if first is not None:
        if outcome.passed:
            why = band_description(first, bands) if bands is not None and first.has_band else ""
            limits = why or "; ".join(f.describe() for f in first.failures)
            return (f"warning: the outputs pass, but {first.tensor} ({first.op_type}) diverges on batch {stem} "
                    f"({limits}): a layer whose damage the outputs hide")
        if bands is not None and first.within_band(bands.factor):  # marked by msit's limits: nothing is out
            return (f"{first.tensor} is the first past msit's limits, and every compared tensor of batch {stem} is "
                    f"within its expected band ({bands.factor:g}x what {bands.precision_mode or 'its precision'} "
                    "explains): the precision mode, not a damaged layer, fails the outputs (infer tune-precision "
                    "finds the ops to keep in fp32)")
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
