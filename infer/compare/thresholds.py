"""When a comparison fails: msit's default rule, overridable per metric and per output from the command line.

msit's rule: CosineSimilarity < 0.99, or RelativeEuclideanDistance > 0.05, or KullbackLeiblerDivergence > 0.005,
or RootMeanSquareError > 1.0, or MeanRelativeError > 1.0 fails. A threshold on a metric where higher is better
(CosineSimilarity, AllclosePassRate) is a floor, on any other a ceiling. A metric that is NaN fails any threshold
put on it: NaN means the pair could not be judged (an all-zero side, a NaN in the output).

``--threshold cosine=0.999`` sets a metric for every output; ``--threshold probs:0:kl=0.01`` (or ``probs:kl=...``)
for one output; ``--threshold kl=off`` lifts a threshold.

Per sample: every sample of an output is also measured on its own (cosine, RED, RMSE, max |x - y|) against the
output's limits for those metrics, and the samples that break one are counted. ``--threshold sample:cosine=0.999``
(or ``sample:probs:0:cosine=...`` for one output) sets a per-sample limit and asks for the per-sample check to
fail the run: then one sample past its limit fails the run even when the dataset-wide numbers pass. An output whose
node is named ``sample`` is reached by its tensor name, ``sample:0:metric=value``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from binio.errors import InferError
from binio.names import node_name
from binio.texts import close_matches
from infer._option_fields import type_name
from infer.compare.metric_names import HIGHER_IS_BETTER, SCALAR_METRICS, shown_against, shown_limit

if TYPE_CHECKING:
    from infer.compare._judge.metrics import Metrics

DEFAULT_THRESHOLDS: dict[str, float] = {
    "CosineSimilarity": 0.99,
    "RelativeEuclideanDistance": 0.05,
    "KullbackLeiblerDivergence": 0.005,
    "RootMeanSquareError": 1.0,
    "MeanRelativeError": 1.0,
}

_ALIASES: dict[str, str] = {
    "cosine": "CosineSimilarity", "cos": "CosineSimilarity",
    "max_abs": "MaxAbsoluteError", "maxabs": "MaxAbsoluteError", "max_abs_error": "MaxAbsoluteError",
    "mae": "MeanAbsoluteError", "mean_abs": "MeanAbsoluteError",
    "rmse": "RootMeanSquareError",
    "red": "RelativeEuclideanDistance",
    "are": "AccumulatedRelativeError",
    "max_re": "MaxRelativeError", "maxre": "MaxRelativeError",
    "mean_re": "MeanRelativeError", "meanre": "MeanRelativeError",
    "kl": "KullbackLeiblerDivergence", "kld": "KullbackLeiblerDivergence",
    "allclose": "AllclosePassRate",
}
# The values each metric can take (cosine capped at 1, a pass rate a fraction, every error 0 or more): a limit
# outside them could never be met (cosine=1.5, red=-1), or never broken, which 'off' says plainly.
LIMIT_RANGES: dict[str, tuple[float, float]] = {"CosineSimilarity": (-1.0, 1.0), "AllclosePassRate": (0.0, 1.0)}
_OFF = ("off", "none")
_SAMPLE = "sample:"
# What a single sample is measured by (`infer.compare._judge.passes`): the metrics a per-sample limit may name.
SAMPLE_METRICS: tuple[str, ...] = ("CosineSimilarity", "RelativeEuclideanDistance", "RootMeanSquareError",
                                   "MaxAbsoluteError")


class ThresholdError(InferError):
    """A --threshold that names no known metric or output, or has no number."""


def metric_name(text: str, *, where: str = "--threshold") -> str:
    """``cosine``, ``CosineSimilarity`` or ``cosinesimilarity`` -> ``CosineSimilarity``; `where` names the
    setting in a refusal."""
    key = text.strip()
    for name in SCALAR_METRICS:
        if key.lower() == name.lower():
            return name
    found = _ALIASES.get(key.lower())
    if found is None:
        spellings = {name.lower(): name for name in SCALAR_METRICS} | {alias: alias for alias in _ALIASES}
        close = close_matches(key.lower(), list(spellings), cutoff=0.6)
        suggestion = f" (did you mean {spellings[close[0]]!r}?)" if close else ""
        known = ", ".join(SCALAR_METRICS) + "; or " + ", ".join(sorted(_ALIASES))
        raise ThresholdError(f"{where}: unknown metric {text!r}{suggestion}: expected one of {known}")
    return found


@dataclass(frozen=True)
class ThresholdSetting:
    """One ``--threshold``: a metric, its limit (None lifts it), and the output it is for (None: all)."""

    metric: str
    limit: float | None
    output: str | None = None
    per_sample: bool = False  # ``sample:...``: a limit for each sample on its own
    written: str = field(default="", compare=False)  # as the user wrote it (``cosine=0.999``), for the commands shown

    def describe(self) -> str:
        limit = "off" if self.limit is None else shown_limit(self.limit)
        where = f"{self.output}:" if self.output else ""
        return f"{'sample:' if self.per_sample else ''}{where}{self.metric}={limit}"

    @property
    def text(self) -> str:
        """The setting as --threshold takes it (as the user wrote it, where they did): it parses back to itself."""
        if self.written:
            return self.written
        where = f"{self.output}:" if self.output else ""
        limit = "off" if self.limit is None else repr(self.limit)
        return f"{'sample:' if self.per_sample else ''}{where}{self.metric}={limit}"


def parse_threshold(text: str, *, where: str = "") -> ThresholdSetting:
    """``metric=value`` or ``output:metric=value``; the output may itself hold colons (``probs:0:kl=0.01``).
    A refusal starts with `where` (default: ``--threshold 'TEXT'``)."""
    where = where or f"--threshold {text!r}"
    written = text
    per_sample = text.lower().startswith(_SAMPLE) and not text[len(_SAMPLE):].split(":", 1)[0].isdigit()
    if per_sample:
        text = text[len(_SAMPLE):]
    left, sep, value_text = text.rpartition("=")
    if not sep or not left.strip():
        raise ThresholdError(f"{where}: expected metric=value or output:metric=value")
    output, colon, metric_text = left.rpartition(":")
    if colon and not output.strip():
        raise ThresholdError(f"{where}: no output name before ':' (expected output:metric=value, or metric=value "
                             "for every output)")
    metric = metric_name(metric_text, where=where)
    if per_sample and metric not in SAMPLE_METRICS:
        raise ThresholdError(f"{where}: {metric} is not measured per sample; a per-sample limit takes one of "
                             f"{', '.join(SAMPLE_METRICS)}")
    value = value_text.strip()
    if value.lower() in _OFF:
        limit = None
    else:
        try:
            limit = float(value)
        except ValueError:
            raise ThresholdError(f"{where}: expected a number (or off) after '=', found {value!r}") from None
        if math.isnan(limit):
            raise ThresholdError(f"{where}: the limit cannot be NaN")
        low, high = LIMIT_RANGES.get(metric, (0.0, math.inf))
        if not (low <= limit <= high and math.isfinite(limit)):
            span = f"a limit from {low:g} to {high:g}" if math.isfinite(high) else f"a finite limit of {low:g} or more"
            raise ThresholdError(f"{where}: expected {span} (the values {metric} takes), found {value}",
                                 hint="'off' lifts a limit" if math.isinf(limit) and limit > 0 else None)
    return ThresholdSetting(metric=metric, limit=limit, output=output.strip() or None, per_sample=per_sample,
                            written=written)


@dataclass(frozen=True)
class Failure:
    """One metric of one output that broke its limit."""

    output: str
    metric: str
    value: float
    limit: float

    def describe(self) -> str:
        if math.isnan(self.value):
            return f"{self.output} {self.metric} NaN (limit {shown_limit(self.limit)})"
        relation = "<" if self.metric in HIGHER_IS_BETTER else ">"
        return (f"{self.output} {self.metric} {shown_against(self.value, self.limit, self.metric)} {relation} "
                f"{shown_limit(self.limit)}")


@dataclass(frozen=True)
class Thresholds:
    """The limits in force: the defaults, then settings for every output, then settings for one output."""

    settings: tuple[ThresholdSetting, ...] = ()
    defaults: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    @classmethod
    def parse(cls, texts: Iterable[str]) -> Thresholds:
        return cls(settings=tuple(parse_threshold(t) for t in texts))

    @property
    def texts(self) -> tuple[str, ...]:
        """The settings as --threshold takes them (the defaults are not settings)."""
        return tuple(s.text for s in self.settings)

    def cli_texts(self) -> tuple[str, ...]:
        """How the command line writes them (`infer._option_fields.cli_texts`): one --threshold each."""
        return self.texts


    def naming_tensors(self, keys: Mapping[str, str], outputs: Sequence[str]) -> Thresholds:
        """The settings with an output named by its SavedModel signature key (`keys`: tensor -> key) renamed to
        its tensor; a name that is an output's own name stays as it is."""
        tensors = {key: tensor for tensor, key in keys.items() if tensor in outputs}
        renamed = tuple(replace(s, output=tensors[s.output]) if s.output in tensors
                        and not any(_matches(s.output, o) for o in outputs) else s for s in self.settings)
        return replace(self, settings=renamed)

    def check_outputs(self, outputs: Sequence[str]) -> None:
        """Refuses a per-output setting that names no output of the model."""
        for setting in self.settings:
            if setting.output is not None and not any(_matches(setting.output, o) for o in outputs):
                raise ThresholdError(f"--threshold {'sample:' if setting.per_sample else ''}{setting.output}:"
                                     f"{setting.metric}: no output named "
                                     f"{setting.output!r}; outputs are: {', '.join(outputs)}")

    def limits(self, output: str) -> dict[str, float]:
        """metric -> limit for one output (tensor name), over the dataset."""
        return self._applied(dict(self.defaults), output, per_sample=False)

    def sample_limits(self, output: str) -> dict[str, float]:
        """metric -> limit for each sample of one output: the output's limits on the metrics a sample is measured
        by, then the ``sample:`` settings."""
        start: dict[str, float | None] = {m: v for m, v in self.limits(output).items() if m in SAMPLE_METRICS}
        return self._applied(start, output, per_sample=True)

    @property
    def per_sample_asked(self) -> bool:
        """Whether a ``sample:`` setting asks for samples past their limits to fail the run."""
        return any(s.per_sample for s in self.settings)

    def _applied(self, limits: dict[str, float | None], output: str, *, per_sample: bool) -> dict[str, float]:
        for general in (True, False):
            for setting in self.settings:
                if setting.per_sample != per_sample:
                    continue
                if (setting.output is None) == general and (general or _matches(setting.output or "", output)):
                    limits[setting.metric] = setting.limit
        return {metric: limit for metric, limit in limits.items() if limit is not None}

    def failures(self, output: str, metrics: Metrics) -> tuple[Failure, ...]:
        """The limits `metrics` break, in msaccucmp's metric order."""
        found = []
        for metric, limit in self.limits(output).items():
            value = metrics.value(metric)
            if breaks(metric, value, limit):
                found.append(Failure(output=output, metric=metric, value=value, limit=limit))
        order = {name: i for i, name in enumerate(SCALAR_METRICS)}
        return tuple(sorted(found, key=lambda f: order[f.metric]))


def breaks(metric: str, value: float, limit: float) -> bool:
    if math.isnan(value):
        return True
    return value < limit if metric in HIGHER_IS_BETTER else value > limit


def _matches(selector: str, output: str) -> bool:
    return selector in (output, node_name(output))



def thresholds_key(value: object, where: str) -> Thresholds:
    """pipeline.toml's ``thresholds = { cosine = 0.999, kl = "off" }``: a number, or "off" to lift msit's default;
    each key a metric or ``output:metric`` as --threshold names them."""
    if not isinstance(value, dict):
        raise ThresholdError(f"{where}: expected a table of metric = number, got {type_name(value)} {value!r}")
    settings = []
    for key, limit in value.items():
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            text = f"{key}={float(limit)!r}"
        elif limit == "off":
            text = f"{key}=off"
        else:
            raise ThresholdError(f'{where}.{key}: expected a number or "off", got {type_name(limit)} {limit!r}')
        settings.append(parse_threshold(text, where=f"{where}.{key}"))
    return Thresholds(settings=tuple(settings))
