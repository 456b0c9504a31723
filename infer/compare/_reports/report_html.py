"""report.html: one self-contained page (plots inline as base64 PNG) a user can mail or attach to a review.

Per output: the distribution of |actual - golden| on a log scale, cosine similarity per batch, golden against
actual for a bounded sample of elements, and the worst samples; then top-k figures and, with --layerwise, the
tensors in graph order with the one where the converted model diverges marked. Plots are drawn with matplotlib's
Agg canvas directly (no pyplot), so nothing global of the caller's matplotlib is touched.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from binio.atomic import write_bytes_atomic
from infer.compare._judge.fp16_trouble import DOCS as FP16_DOCS
from infer.compare.metric_names import shown, shown_limit
from infer.compare.result import BatchResults, CompareResult, LayerwiseResult, OutputResult, PlotData, fp16_cause
from infer.compare.thresholds import DEFAULT_THRESHOLDS

REPORT_HTML = "report.html"
_COSINE = "CosineSimilarity"
# The metrics of the summary table, headed by their short names (msaccucmp's full name shows on hover).
_SHOWN = {"CosineSimilarity": "cosine", "RelativeEuclideanDistance": "RED", "KullbackLeiblerDivergence": "KL",
          "RootMeanSquareError": "RMSE", "MeanRelativeError": "MeanRE", "MaxAbsoluteError": "MaxAbsErr",
          "MeanAbsoluteError": "MeanAbsErr", "MaxRelativeError": "MaxRE", "AllclosePassRate": "allclose"}
_STYLE = """
* { box-sizing: border-box; }
body { font-family: system-ui, sans-serif; margin: 0 auto; padding: 1em 2em; max-width: 1400px; color: #222;
       line-height: 1.4; overflow-wrap: anywhere; }
header { border-bottom: 1px solid #ddd; padding-bottom: 0.5em; margin-bottom: 1em; }
h1 { font-size: 1.5em; margin: 0.2em 0; } h2 { font-size: 1.2em; margin-top: 1.5em; } h3 { font-size: 1.05em; }
.badge { display: inline-block; padding: 0.1em 0.8em; border-radius: 1em; font-weight: bold; color: #fff;
         vertical-align: middle; font-size: 0.75em; letter-spacing: 0.05em; margin-left: 0.4em; }
p.verdict { color: #555; font-size: 85%; }
.badge.pass { background: #1a7f37; color: #fff; } .badge.fail { background: #cf222e; color: #fff; }
dl.sides { display: grid; grid-template-columns: max-content 1fr; gap: 0.1em 1em; margin: 0.5em 0; }
dl.sides dt { font-weight: bold; } dl.sides dd { margin: 0; font-family: monospace; }
ul.reasons { margin: 0.3em 0; padding-left: 1.2em; color: #cf222e; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 90%; }
td, th { border: 1px solid #bbb; padding: 3px 8px; text-align: right; white-space: nowrap; overflow-wrap: normal; }
th { background: #eee; } td.name { text-align: left; font-family: monospace; }
th:first-child { text-align: left; }
.pass { color: #1a7f37; font-weight: bold; } .fail { color: #cf222e; font-weight: bold; }
tr.first td { background: #ffe0e0; }
table.facts td.name { white-space: normal; overflow-wrap: anywhere; text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 0.5em; }
.plots img { flex: 1 1 300px; min-width: 0; max-width: 100%; height: auto; border: 1px solid #ddd; }
.plots img.wide { flex-basis: 100%; }
.plots svg { flex: 1 1 100%; min-width: 0; max-width: 100%; height: auto; border: 1px solid #ddd; }
@media (max-width: 700px) { body { padding: 0.5em; } .plots img { flex-basis: 100%; } }
"""


def _png(draw: Callable[[Any], None], width: float = 5.0, height: float = 3.6, css_class: str = "") -> str:
    """An <img> whose PNG is drawn by `draw(axes)` and embedded as a data URI."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=90)
    FigureCanvasAgg(figure)
    draw(figure.add_subplot(1, 1, 1))
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    klass = f' class="{css_class}"' if css_class else ""
    return f'<img alt="plot"{klass} src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def _svg(draw: Callable[[Any], None], width: float, height: float, css_class: str = "") -> str:
    """An inline <svg> drawn by `draw(axes)`: its text kept as text and its parts' gids as ids, so that a browser
    (and a test in one) can find them; it scales to the width it is given."""
    import re

    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "infer"}):
        figure = Figure(figsize=(width, height), dpi=90)
        FigureCanvasSVG(figure)
        draw(figure.add_subplot(1, 1, 1))
        figure.tight_layout()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]  # the XML declaration and doctype belong to a file, not a page
    klass = f' class="{css_class}"' if css_class else ""
    return re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"', rf'<svg role="img"{klass} \1', text, count=1)


def histogram_bars(plot: PlotData) -> tuple[tuple[float, ...], tuple[int, ...], tuple[float, float]]:
    """What the error histogram draws: the bins the data fills (edges, counts), and the bar of the exact ones
    (|x - y| < 1e-12), one bin wide, left of them with a bin's gap."""
    filled = plot.filled_range()
    low, high = filled if filled is not None else (0, 1)
    edges, counts = plot.error_edges[low:high + 1], plot.error_counts[low:high]
    width = edges[1] - edges[0]
    return edges, counts, (edges[0] - 2 * width, edges[0] - width)


def _histogram(output: OutputResult) -> str:
    plot = output.plot
    edges, counts, exact = histogram_bars(plot)

    def draw(axes: Any) -> None:
        axes.stairs(counts, edges, fill=True, color="#4c72b0")
        axes.bar([(exact[0] + exact[1]) / 2], [plot.exact_count], width=exact[1] - exact[0], color="#1a7f37")
        ticks = [t for t in axes.get_xticks() if edges[0] <= t <= edges[-1]]
        axes.set_xticks([(exact[0] + exact[1]) / 2, *ticks], ["exact", *(f"{t:g}" for t in ticks)])
        axes.set_xlim(exact[0] - (exact[1] - exact[0]), edges[-1])
        axes.set_xlabel("log10 |actual - golden|  (exact: below 1e-12)")
        axes.set_ylabel("elements")
        axes.set_title(f"{output.name}: error distribution\n{plot.exact_count} exact, "
                       f"{plot.nonfinite_count} NaN/inf", fontsize=9)

    return _png(draw)


# 1 - cosine is drawn on a log axis: near 1, a cosine axis needs an offset (matplotlib's "1e-8+1" with ticks
# read as -5..0), and an exact batch (1 - cosine = 0) sits on this floor instead of falling off the axis.
_EXACT = 1e-16


def distances(cosines: Sequence[float] | np.ndarray) -> np.ndarray:
    """1 - cosine for a log axis: an exact value (1 - cosine <= 0) on the floor; NaN stays NaN."""
    with np.errstate(invalid="ignore"):
        return np.maximum(1.0 - np.asarray(cosines, dtype=np.float64), _EXACT)  # NaN stays NaN (np.maximum)


# Batches drawn one by one up to this many; past it, the worst of each run of batches (a spike stays a spike). At
# batch 1 a validation set is 50,000 batches: drawn one by one they were 40 MB of matplotlib's paths at compare's
# peak, for a plot no one can read point by point.
PER_BATCH_POINTS = 2000


@dataclass(frozen=True)
class PerBatchPoints:
    """What the per-batch plot draws: x (the first batch of each point's run), y (the worst finite distance in the
    run; NaN where every one is NaN), the x of the runs holding a NaN, and how many batches a point stands for."""

    xs: tuple[int, ...]
    ys: tuple[float, ...]
    nan_xs: tuple[int, ...]
    per_point: int


def per_batch_points(values: Sequence[float] | np.ndarray, most: int = PER_BATCH_POINTS) -> PerBatchPoints:
    column = np.asarray(values, dtype=np.float64)
    per_point = max(1, -(-len(column) // most))
    xs, ys, nan_xs = [], [], []
    for start in range(0, len(column), per_point):
        run = column[start:start + per_point]
        finite = run[~np.isnan(run)]
        xs.append(start)
        ys.append(float(finite.max()) if finite.size else math.nan)
        if finite.size < run.size:
            nan_xs.append(start)
    return PerBatchPoints(xs=tuple(xs), ys=tuple(ys), nan_xs=tuple(nan_xs), per_point=per_point)


def _cosine_per_batch(output: OutputResult) -> str:
    def draw(axes: Any) -> None:
        batches = output.batches
        values = distances(batches.metric_values("cosine_similarity") if isinstance(batches, BatchResults)
                           else [b.metrics.cosine_similarity for b in batches])  # a column: no object a batch
        points = per_batch_points(values)
        if points.per_point == 1:
            axes.plot(points.xs, points.ys, marker="o", markersize=3)
        else:
            axes.plot(points.xs, points.ys, linewidth=0.8, label=f"worst of each {points.per_point} batches")
        axes.set_yscale("log")
        limit = output.limits.get("CosineSimilarity")
        if limit is not None:
            axes.axhline(max(1.0 - limit, _EXACT), color="#cf222e", linestyle="--",
                         label=f"threshold (cosine {shown_limit(limit)})")
        undefined = int(np.isnan(values).sum())
        if undefined:  # a NaN draws no point: mark those batches at the top of the plot
            top = max([v for v in points.ys if not math.isnan(v)] + [1.0])
            axes.plot(points.nan_xs, [top] * len(points.nan_xs), "x", color="#cf222e", label=f"NaN ({undefined})")
        if limit is not None or undefined or points.per_point > 1:
            axes.legend(fontsize=8)
        axes.set_xlabel("batch")
        axes.set_ylabel("1 - cosine similarity (log)")
        axes.set_title(f"{output.name}: cosine distance per batch (lower is better)", fontsize=9)

    return _png(draw)


def _scatter(output: OutputResult) -> str:
    plot = output.plot

    def draw(axes: Any) -> None:
        axes.scatter(plot.scatter_golden, plot.scatter_actual, s=3, alpha=0.5)
        finite = [v for v in (*plot.scatter_golden, *plot.scatter_actual) if math.isfinite(v)]
        if finite:
            low, high = min(finite), max(finite)
            axes.plot([low, high], [low, high], color="#cf222e", linewidth=0.8)
        axes.set_xlabel("golden (TensorFlow)")
        axes.set_ylabel("actual (converted)")
        axes.set_title(f"{output.name}: {len(plot.scatter_golden)} elements", fontsize=9)

    return _png(draw)


def worst_bars(output: OutputResult) -> tuple[tuple[str, ...], tuple[float, ...], tuple[bool, ...]]:
    """What the worst-samples chart draws, top to bottom: the samples in the order they are ranked (the lowest
    cosine first), each bar 1 - cosine, the metric they are ranked by; a NaN cosine has no length and is drawn
    full width, marked (False)."""
    samples = output.worst_samples
    distances = [1.0 - s.cosine_similarity for s in samples]
    widest = max((d for d in distances if math.isfinite(d)), default=0.0) or 1.0
    return (tuple(f"{s.sample}" for s in samples), tuple(d if math.isfinite(d) else widest for d in distances),
            tuple(math.isfinite(d) for d in distances))


def _worst_plot(output: OutputResult) -> str:
    from matplotlib.ticker import MaxNLocator

    labels, lengths, defined = worst_bars(output)

    def draw(axes: Any) -> None:
        # barh draws its first bar at the bottom: reversed, the worst sample is on top.
        axes.barh([f"#{i + 1}: {label}" for i, label in enumerate(labels)][::-1], lengths[::-1],
                  color=["#4c72b0" if ok else "#cf222e" for ok in defined][::-1])
        axes.set_xlabel("1 - cosine similarity")
        axes.xaxis.set_major_locator(MaxNLocator(4))  # long labels such as 0.0025 would overlap
        axes.set_ylabel("rank: sample")
        undefined = "" if all(defined) else "; red: NaN cosine"
        axes.set_title(f"{output.name}: worst samples by cosine, worst on top{undefined}", fontsize=9)

    return _png(draw)


def _table(rows: str, css_class: str = "") -> str:
    """A table that scrolls sideways inside its own box on a narrow screen, never the page."""
    klass = f" class='{css_class}'" if css_class else ""
    return f"<div class='scroll'><table{klass}>{rows}</table></div>"


def _metrics_table(result: CompareResult) -> str:
    head = "<th>output</th>" + "".join(f"<th title='{name}'>{short}</th>" for name, short in _SHOWN.items())
    head += "<th>NaN/inf</th><th>fp16</th><th>verdict</th>"
    rows = []
    for output in result.outputs:
        m = output.metrics
        counts = m.counts
        cells = "".join(f"<td>{shown(m.value(name), name)}</td>" for name in _SHOWN)
        verdict = '<span class="pass">pass</span>' if result.output_passed(output) else '<span class="fail">FAIL</span>'
        rows.append(f'<tr><td class="name">{html.escape(output.name)}</td>{cells}'
                    f"<td>{counts.nan_actual + counts.inf_actual}</td>"
                    f"<td>{fp16_cause(output, result.layerwise, result.fp16_trouble)}</td><td>{verdict}</td></tr>")
    return _table(f"<tr>{head}</tr>{''.join(rows)}")


def _output_section(output: OutputResult) -> str:
    parts = [f"<h2>{html.escape(output.name)}</h2>"]
    if output.failures:
        parts.append("<p class='fail'>" + "<br>".join(html.escape(f.describe()) for f in output.failures) + "</p>")
    sd = output.metrics
    parts.append(f"<p>StandardDeviation (mean;std): actual ({shown(sd.actual_mean)};{shown(sd.actual_std)}), golden "
                 f"({shown(sd.golden_mean)};{shown(sd.golden_std)}); {sd.elements} elements; allclose atol="
                 f"{sd.atol:g} rtol={sd.rtol:g}</p>")
    plots = [_histogram(output), _cosine_per_batch(output), _scatter(output)]
    if output.worst_samples:
        plots.append(_worst_plot(output))
    parts.append(f"<div class='plots'>{''.join(plots)}</div>")
    if output.worst_samples:
        rows = "".join(f"<tr><td>{s.sample}</td><td class='name'>{html.escape(s.source)}</td>"
                       f"<td class='name'>{s.stem}</td><td>{s.row}</td>"
                       f"<td>{shown(s.cosine_similarity, _COSINE)}</td><td>{shown(s.max_absolute_error)}</td>"
                       f"<td>{shown(s.root_mean_square_error)}</td><td>{shown(s.relative_euclidean_distance)}</td></tr>"
                       for s in output.worst_samples)
        parts.append("<h3>Worst samples (ranked by cosine, ties by max abs error)</h3>" + _table(
                     "<tr><th>sample</th><th>source</th><th>batch</th><th>row</th><th>cosine</th><th>max abs error"
                     f"</th><th>RMSE</th><th>RED</th></tr>{rows}"))
    limits = ", ".join(f"{name} {shown_limit(limit)}" for name, limit in output.sample_limits.items()) or "none"
    failing = len(output.failing_samples)
    worst = f"; worst: {html.escape(output.worst_failing.describe())}" if output.worst_failing is not None else ""
    parts.append(f"<p>Per sample: {failing} sample{'s' if failing != 1 else ''} fail on their own (limits: "
                 f"{html.escape(limits)}){worst}</p>")
    if output.topk is not None:
        t = output.topk
        text = (f"top-1 agreement {t.top1_agreement:.4%}, top-{t.k} overlap {t.topk_overlap:.4%} over "
                f"{t.samples} samples")
        if t.without_top1:
            text += (f" ({t.without_top1} rank no class above another in the converted model's outputs, their "
                     "scores NaN or all the same: no top-1)")
        if t.accuracy is not None:
            a = t.accuracy
            text += (f"; accuracy against labels: top-1 golden {a.golden_top1:.4%}, actual {a.actual_top1:.4%} "
                     f"(difference {a.top1_difference:+.4%}); top-{t.k} golden {a.golden_topk:.4%}, actual "
                     f"{a.actual_topk:.4%} (difference {a.topk_difference:+.4%})")
        parts.append(f"<h3>Classifier</h3><p>{text}</p>")
    return "\n".join(parts)


@dataclass(frozen=True)
class LayerPoints:
    """What the error-along-the-network picture draws, tensor by tensor in graph order."""

    names: tuple[str, ...]  # each compared tensor
    red: tuple[float, ...]  # its RelativeEuclideanDistance (an exact one on the floor); NaN where not finite
    nonfinite: tuple[int, ...]  # where the RED is inf or NaN (inf/NaN in the converted tensor): the top edge
    first: int | None  # the first tensor to diverge


def layer_points(layers: LayerwiseResult) -> LayerPoints:
    matched = layers.matched
    values = [r.metrics.relative_euclidean_distance if r.metrics else math.nan for r in matched]
    return LayerPoints(names=tuple(r.tensor for r in matched),
                       red=tuple(max(v, _EXACT) if math.isfinite(v) else math.nan for v in values),
                       nonfinite=tuple(i for i, v in enumerate(values) if not math.isfinite(v)),
                       first=next((i for i, r in enumerate(matched) if r.diverges_here), None))


_MOST_TICKS = 40  # names on the x axis: every tensor's up to this many, else every k-th and the ones marked


def tick_positions(points: LayerPoints) -> list[int]:
    """The tensors whose names the x axis shows: all of them, or every k-th and the marked and first inf/NaN ones."""
    count = len(points.names)
    if count <= _MOST_TICKS:
        return list(range(count))
    step = -(-count // _MOST_TICKS)
    chosen = set(range(0, count, step)) | set(points.nonfinite[:1])
    if points.first is not None:
        chosen.add(points.first)
    return sorted(chosen)


def _short_name(name: str, most: int = 32) -> str:
    return name if len(name) <= most else "…" + name[-(most - 1):]


def _error_along_the_network(layers: LayerwiseResult) -> str:
    """The RED of every compared tensor along the graph, on a log scale, with its band; a tensor whose RED is not
    finite (inf/NaN in the converted tensor: an overflow) is drawn at the top edge and labelled, the first to
    diverge is starred and named, and the x axis names the tensors. Inline SVG, its parts given ids (`plot-...`)
    that the browser test finds."""
    from matplotlib.transforms import blended_transform_factory

    points = layer_points(layers)
    band = [r.band if r.has_band else math.nan for r in layers.matched] if layers.bands is not None else []
    x = range(len(points.red))

    def draw(axes: Any) -> None:
        axes.patch.set_gid("plot-axes")
        axes.plot(x, points.red, marker="o", markersize=3, label="RED per tensor")
        if band:
            axes.plot(x, band, color="#8c959f", linewidth=1, label="its band (expected RED)")
            axes.plot(x, [b * layers.factor for b in band], color="#8c959f", linestyle=":", linewidth=1,
                      label=f"band x {layers.factor:g}")
        axes.set_yscale("log")
        axes.axhline(DEFAULT_THRESHOLDS["RelativeEuclideanDistance"], color="#cf222e", linestyle="--",
                     label="msit's RED limit")
        top = blended_transform_factory(axes.transData, axes.transAxes)  # x a tensor, y the axes' top edge
        if points.nonfinite:
            marker, = axes.plot(points.nonfinite, [1.0] * len(points.nonfinite), "^", color="#cf222e",
                                markersize=7, transform=top, clip_on=False, label="inf/NaN (at the top edge)")
            marker.set_gid("plot-nonfinite")
            label = axes.annotate(f"inf/NaN from {points.names[points.nonfinite[0]]}", (points.nonfinite[0], 1.0),
                                  xycoords=top, xytext=(6, -12), textcoords="offset points", fontsize=8,
                                  color="#cf222e")
            label.set_gid("plot-nonfinite-label")
        if points.first is not None:
            at_top = points.first in points.nonfinite
            where = (points.first, 1.0 if at_top else points.red[points.first])
            transform = top if at_top else axes.transData
            star, = axes.plot([where[0]], [where[1]], "*", markersize=14, color="#cf222e", transform=transform,
                              clip_on=False, label="first to diverge")
            star.set_gid("plot-first")
            name = axes.annotate(f"first to diverge: {points.names[points.first]}", where, xycoords=transform,
                                 xytext=(8, -26 if at_top else 8), textcoords="offset points", fontsize=8,
                                 fontweight="bold", color="#cf222e")
            name.set_gid("plot-first-label")
        axes.legend(fontsize=7, loc="lower right")
        ticks = tick_positions(points)
        axes.set_xticks(ticks)
        axes.set_xticklabels([_short_name(points.names[i]) for i in ticks], rotation=90, fontsize=6)
        for index, tick in zip(ticks, axes.get_xticklabels(), strict=True):
            tick.set_gid(f"plot-xtick-{index}")
        axes.set_xlabel("compared tensor, in graph order")
        axes.set_ylabel("relative euclidean distance (log)")
        axes.set_title("error along the network", fontsize=9)

    return _svg(draw, width=10.0, height=4.8, css_class="wide")


def _layerwise_section(layers: LayerwiseResult) -> str:
    first = layers.diverges_at
    lines = [("first tensor to diverge" + (" (a warning: the outputs pass)" if layers.is_warning else "")
              + ": <span class='fail'>" + html.escape(first.tensor) + "</span>") if first else
             "no tensor diverges"]
    growth = layers.growth_text()  # only where it means something
    if growth:
        lines.append(html.escape(growth))
    if layers.nonfinite is not None:
        lines.append("first inf/NaN: " + html.escape(layers.nonfinite.describe()))
    if layers.note:
        lines.append(html.escape(layers.note))
    if layers.bands is not None:
        lines.append(f"each tensor judged against its expected-error band: the RED "
                     f"{html.escape(layers.bands.precision_mode)} explains there (the stand-in's emulation), out of "
                     f"it past {layers.bands.factor:g}x")
    elif layers.band_note:
        lines.append(html.escape(layers.band_note))
    parts = [f"<h2>Layer by layer (batch {html.escape(layers.batch_stem)}, {html.escape(layers.batch_reason)})</h2>",
             "<p>" + "<br>".join(lines) + "</p>"]
    matched = layers.matched
    if matched:
        parts.append(f"<div class='plots'>{_error_along_the_network(layers)}</div>")
    banded = layers.bands is not None
    rows = []
    for row in layers.rows:
        klass = " class='first'" if row.diverges_here else ""
        if row.metrics is None:
            cells = f"<td colspan='{5 if banded else 3}' class='name'>{html.escape(row.unmatched_reason)}</td>"
        else:
            m = row.metrics
            cells = (f"<td>{shown(m.cosine_similarity, _COSINE)}</td><td>{shown(m.max_absolute_error)}</td>"
                     f"<td>{shown(m.relative_euclidean_distance)}</td>")
            if banded:
                out = row.has_band and row.band_excess > layers.factor
                excess = f"{row.band_excess:.3g}" if row.has_band else "-"
                cells += (f"<td>{shown(row.band) if row.has_band else '-'}</td>"
                          f"<td>{f'<span class=fail>{excess}</span>' if out else excess}</td>")
        rows.append(f"<tr{klass}><td class='name'>{html.escape(row.tensor)}</td><td class='name'>{row.op_type}</td>"
                    f"{cells}</tr>")
    band_headers = "<th>band (expected RED)</th><th>x band</th>" if banded else ""
    parts.append(_table("<tr><th>tensor</th><th>op</th><th>cosine</th><th>max abs error</th><th>RED</th>"
                        f"{band_headers}</tr>" + "".join(rows)))
    return "\n".join(parts)


def _provenance_section(result: CompareResult) -> str:
    """What was compared with what: the header a report read weeks later is judged by."""
    p = result.provenance
    if p is None:
        return ""
    emulation = ", ".join(f"{k} {v}" for k, v in p.emulation.items() if k in ("mode", "storage", "rounded_tensors",
                                                                            "rounded_weights")) or "none"
    thresholds = "; ".join(f"{name}: " + ", ".join(f"{m} {shown_limit(v)}" for m, v in limits.items())
                           for name, limits in p.thresholds.items())
    sample_limits = "; ".join(f"{name}: " + ", ".join(f"{m} {shown_limit(v)}" for m, v in limits.items())
                              for name, limits in p.sample_thresholds.items())
    rows = [("infer version", p.infer_version), ("date", p.date), ("golden", p.golden.describe()),
            ("actual", p.actual.describe()), *_sha256_rows(p),
            ("precision mode", p.precision_mode or "none (fp32 graph)"), ("emulation", emulation),
            ("dataset", f"{p.dataset} ({p.samples} samples)"), ("dataset sha256", p.dataset_sha256),
            ("thresholds", thresholds), ("per-sample limits", sample_limits + (
                " (fail the run)" if result.per_sample_asked else " (counted, not failing the run)")),
            *(("sample order", o.describe(shown=5)) for o in p.sample_order)]
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td class='name'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<h2>Compared</h2>{_table(cells, 'facts')}"


def _sha256_rows(p: Any) -> list[tuple[str, str]]:
    """Each model's sha256 once, with every name it goes by: the golden run's model is the frozen pb, the actual
    run's the converted model, most of the time."""
    named: dict[str, list[str]] = {}
    for name, digest in (("frozen pb", p.pb_sha256), ("golden model", p.golden.model_sha256),
                         ("converted model", p.converted_sha256), ("actual model", p.actual.model_sha256)):
        if digest:
            named.setdefault(digest, []).append(name)
    rows = [(f"{' = '.join(names)} sha256", digest) for digest, names in named.items()]
    return rows if p.converted_sha256 else [*rows, ("converted model", "not converted")]


def _titled_table(title: str, headers: tuple[str, ...], rows: list[str]) -> str:
    """A section of one table: `rows` are ready ``<tr>`` elements; none, no section."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    return f"<h2>{html.escape(title)}</h2>" + _table(f"<tr>{head}</tr>{''.join(rows)}")


def _expected_section(result: CompareResult) -> str:
    rows = [f"<tr><td class='name'>{html.escape(e.output)}</td><td>{shown(e.actual_rmse)}</td>"
            f"<td>{shown(e.emulated_rmse)}</td><td>{shown(e.rmse_ratio)}</td>"
            f"<td>{shown(e.actual_one_minus_cosine)}</td><td>{shown(e.emulated_one_minus_cosine)}</td>"
            f"<td>{shown(e.cosine_ratio)}</td>"
            f"<td>{'<span class=fail>FLAGGED</span>' if e.flagged else 'within'}</td></tr>" for e in result.expected]
    return _titled_table("Expected error (emulated precision)", (
        "output", "RMSE", "emulated", "ratio", "1-cosine", "emulated", "ratio", "band"), rows)


def _preprocessing_section(result: CompareResult) -> str:
    """AIPP's output against the declared preprocessing: per channel, and the settings that differ."""
    rows = [f"<tr><td class='name'>{html.escape(c.input)}</td><td>{', '.join(shown(d) for d in c.max_abs_diff)}</td>"
            f"<td>{shown(c.tolerance)}</td><td>{'ok' if c.passed else '<span class=fail>FAILED</span>'}</td>"
            f"<td class='name'>{html.escape('; '.join(c.mismatches) or '-')}</td></tr>" for c in result.preprocessing]
    return _titled_table("Preprocessing (AIPP against the declared preprocessing)", (
        "input", "max |diff| per channel", "limit", "check", "settings that differ"), rows)


def _header(result: CompareResult) -> str:
    """The verdict as a badge, then what was compared with what and why it failed: what a reader looks at first."""
    verdict = "PASSED" if result.passed else "FAILED"
    badge = f"<span class='badge {'pass' if result.passed else 'fail'}'>{verdict}</span>"
    p = result.provenance
    sides = [("actual", p.actual.describe() if p else result.actual_dir),
             ("golden", p.golden.describe() if p else result.golden_dir),
             ("model", result.contract), ("dataset", f"{result.dataset} ({result.samples} samples, "
                                                     f"{result.padding} padding rows left out)")]
    if result.random_ops:
        sides.append(("random ops", ", ".join(f"{n} ({op})" for n, op in sorted(result.random_ops.items()))))
    sides += [("warning", text) for text in result.warnings]
    listed = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in sides)
    reasons = "" if result.passed else "<ul class='reasons'>" + "".join(
        f"<li>{html.escape(r)}</li>" for r in result.fail_reasons) + "</ul>"
    if result.cause:  # what the outputs alone say made it fail, what it means, and what to do next
        reasons += "".join(
            f"<p class='cause'><b>cause: {html.escape(result.cause)}</b>: {html.escape(t.describe())}. Next: "
            "<code>infer compare ... --layerwise</code> finds the op, <code>infer tune-precision</code> the ops to "
            f"keep in fp32 ({html.escape(FP16_DOCS)}).</p>" for t in result.fp16_trouble)
    reasons += "".join(f"<p class='cause'>{html.escape(o.name)}: {html.escape(o.kl_band.describe())}</p>"
                       for o in result.outputs if o.kl_band is not None)
    return (f"<header><h1>infer compare {badge}</h1><dl class='sides'>{listed}</dl>{reasons}"
            f"<p class='verdict'>{html.escape(result.verdict_line())}</p></header>")


def render_html(result: CompareResult) -> str:
    body = [
        _header(result),
        _metrics_table(result),
        _preprocessing_section(result),
        _expected_section(result),
        *(_output_section(o) for o in result.outputs),
    ]
    if result.layerwise is not None:
        body.append(_layerwise_section(result.layerwise))
    body.append(_provenance_section(result))
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>infer compare: {'PASSED' if result.passed else 'FAILED'}</title><style>{_STYLE}</style>"
            "</head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_report_html(result: CompareResult, folder: Path) -> Path:
    path = Path(folder) / REPORT_HTML
    write_bytes_atomic(path, render_html(result).encode())
    return path
