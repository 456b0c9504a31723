"""The expected-error band: how far a converted model may sit from TensorFlow given its precision mode, and no more.

msit's thresholds are absolute: a model whose fp16 error is ten times what fp16 explains (a damaged layer, a wrong
fusion) can still pass cosine >= 0.99. Here the stand-in's emulation of the same precision mode (`atc_wrap`'s
fp16 rounding, the same pb, the same bins) gives the error that precision alone explains, and each output's actual
error is set against it:

    ratio = actual error / max(emulated error, floor)        for RMSE and for 1 - cosine

An output is flagged when either ratio passes `factor` (default 10). The floors keep a ratio meaningful where the
emulated error is nil (force_fp32, or an output fp16 represents exactly): RMSE_FLOOR_RELATIVE of the golden
output's RMS for RMSE, and ONE_MINUS_COSINE_FLOOR for 1 - cosine, about where fp32 arithmetic in two runtimes
(TensorFlow, ONNX Runtime) already differs.

Limits: the emulation rounds after every op and computes inside an op in fp32; the NPU fuses ops, accumulates in
its own order and has ops only in fp32, so a healthy om may sit a few times off the emulated error either way. A
factor of 10 leaves room for that; a model within the band is not proven right, one outside it is worth a look.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from atc_wrap.precision.modes import PrecisionMode
from atc_wrap.precision.op_controls import CONTROL_FILE_NAMES
from binio.binfile import sha256_file
from binio.document import json_float
from binio.manifest import DatasetManifest
from infer.compare._judge.metrics import Metrics
from infer.compare._sides.golden import cached_run
from infer.compare.errors import ExpectedErrorUnavailable
from infer.compare.metric_names import shown
from infer.compare.options import DEFAULT_FACTOR, CompareOptions
from infer.contract import ModelContract, load_contract
from infer.convert import ConvertOptions, convert_model
from infer.model_aipp import AippOptions, model_aipp
from infer.run import run_model
from infer.run.options import RunOptions

# The modes whose conversion computes in fp32 where the chip can: their error is float32 rounding's.
FP32_MODES: tuple[str, ...] = ("force_fp32", "must_keep_origin_dtype")
RMSE_FLOOR_RELATIVE = 1e-6
ONE_MINUS_COSINE_FLOOR = 1e-7
_EMULATED = "emulated"


@dataclass(frozen=True)
class ExpectedError:
    """One output: the converted model's error against TensorFlow beside the emulated precision's error."""

    output: str
    precision_mode: str
    actual_rmse: float
    emulated_rmse: float
    actual_one_minus_cosine: float
    emulated_one_minus_cosine: float
    rmse_ratio: float
    cosine_ratio: float
    factor: float

    @property
    def flagged(self) -> bool:
        """Worse than the precision explains by more than `factor` (a NaN ratio, from a NaN output, too)."""
        return any(math.isnan(r) or r > self.factor for r in (self.rmse_ratio, self.cosine_ratio))

    @property
    def ratio(self) -> float:
        """The larger of the two ratios (NaN first): how many times its band the output is."""
        return max(self.rmse_ratio, self.cosine_ratio, key=lambda r: math.inf if math.isnan(r) else r)

    def describe(self) -> str:
        """Why it is flagged: ``probs:0 is 37x its expected band (RMSE 0.012 vs 0.00032, what force_fp16
        explains; limit 10x)``."""
        ratio, what, actual, emulated = max(
            (self.rmse_ratio, "RMSE", self.actual_rmse, self.emulated_rmse),
            (self.cosine_ratio, "1-cosine", self.actual_one_minus_cosine, self.emulated_one_minus_cosine),
            key=lambda item: math.inf if math.isnan(item[0]) else item[0])
        return (f"{self.output} is {_ratio(ratio)} its expected band ({what} {shown(actual)} vs {shown(emulated)}, "
                f"what {self.precision_mode or 'its precision'} explains; limit {self.factor:g}x)")

    def summary(self) -> str:
        """For the verdict line: ``probs:0 RMSE 1.2x, 1-cosine 0.9x emulated force_fp16 (within 10x)``."""
        state = "FLAGGED" if self.flagged else f"within {self.factor:g}x"
        return (f"{self.output} RMSE {_ratio(self.rmse_ratio)}, 1-cosine {_ratio(self.cosine_ratio)} emulated "
                f"{self.precision_mode or 'precision'} ({state})")

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "precision_mode": self.precision_mode,
                "actual_rmse": json_float(self.actual_rmse), "emulated_rmse": json_float(self.emulated_rmse),
                "actual_one_minus_cosine": json_float(self.actual_one_minus_cosine),
                "emulated_one_minus_cosine": json_float(self.emulated_one_minus_cosine),
                "rmse_ratio": json_float(self.rmse_ratio), "one_minus_cosine_ratio": json_float(self.cosine_ratio),
                "factor": self.factor, "flagged": self.flagged}


def _ratio(value: float) -> str:
    return "NaN x" if math.isnan(value) else f"{value:.3g}x"


def _golden_rms(metrics: Metrics) -> float:
    return math.sqrt(metrics.golden_std ** 2 + metrics.golden_mean ** 2)


def expected_error(output: str, precision_mode: str, actual: Metrics, emulated: Metrics,
                   factor: float = DEFAULT_FACTOR) -> ExpectedError:
    """The band for one output from its two comparisons with the same golden outputs."""
    rmse_floor = RMSE_FLOOR_RELATIVE * _golden_rms(actual)
    actual_cos, emulated_cos = 1.0 - actual.cosine_similarity, 1.0 - emulated.cosine_similarity
    rmse_ratio = actual.root_mean_square_error / max(emulated.root_mean_square_error, rmse_floor) \
        if rmse_floor > 0 or emulated.root_mean_square_error > 0 else (
            0.0 if actual.root_mean_square_error == 0 else math.inf)
    cosine_ratio = actual_cos / max(emulated_cos, ONE_MINUS_COSINE_FLOOR)
    return ExpectedError(output=output, precision_mode=precision_mode, actual_rmse=actual.root_mean_square_error,
                         emulated_rmse=emulated.root_mean_square_error, actual_one_minus_cosine=actual_cos,
                         emulated_one_minus_cosine=emulated_cos, rmse_ratio=rmse_ratio, cosine_ratio=cosine_ratio,
                         factor=factor)


def stand_in_available() -> bool:
    """Whether tf2onnx and ONNX Runtime are importable, without importing them."""
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("tf2onnx", "onnxruntime"))


def check_emulation_possible(contract: ModelContract) -> None:
    """Refuses, before anything runs, a band that cannot be computed: no converted model, or no stand-in."""
    if contract.converted is None:
        raise ExpectedErrorUnavailable(f"--expected-from-emulation: {contract.path} is not converted; there is "
                                       "no precision mode to emulate")
    if not stand_in_available():
        raise ExpectedErrorUnavailable("--expected-from-emulation: the ONNX Runtime stand-in (tf2onnx, onnxruntime) "
                                       "is not installed here", hint="pip install tf2onnx onnxruntime, or compare "
                                       "without the band")


def expected_by_default(contract: ModelContract) -> bool:
    """The band is computed, and fails the run, unless told otherwise: for an om (the stand-in beside it emulates
    what the chip was asked to compute) and for an fp32 conversion (whose error float32 rounding alone explains),
    where the stand-in is at hand. The fp16 modes keep msit's rule alone by default: their band is a diagnosis."""
    converted = contract.converted
    if converted is None or not stand_in_available():
        return False
    return converted.target == "om" or converted.precision_mode in FP32_MODES


def wants_expected(contract: ModelContract, options: CompareOptions) -> bool:
    if options.fail_on_expected or options.expected_from_emulation:
        return True
    if options.expected_from_emulation is None:
        return expected_by_default(contract)
    return False


def fails_on_expected(contract: ModelContract, options: CompareOptions) -> bool:
    if options.fail_on_expected is not None:
        return options.fail_on_expected
    return options.expected_from_emulation is not False and expected_by_default(contract)


def _emulation_settings(contract: ModelContract) -> tuple[str, str, str, str]:
    check_emulation_possible(contract)
    converted = contract.converted
    assert converted is not None
    settings = converted.settings
    return (converted.precision_mode, str(settings.get("input_fp16_nodes", "") or ""),
            str(settings.get("output_type", "") or ""), _planned_chip(contract))


def _planned_chip(contract: ModelContract) -> str:
    """The chip whose operator table the emulation plans with: the one the conversion was planned for (the om's,
    or the stand-in's given or assumed one); "" for a model converted without a plan (before plans, or an om for
    a chip no table covers): the emulation then assumes its default."""
    converted = contract.converted
    assert converted is not None
    plan = converted.plan()
    return plan.chip if plan is not None else ""


def _op_control_files(contract: ModelContract) -> dict[str, str]:
    """The per-op precision files' texts the conversion used (ConvertOptions field -> text)."""
    assert contract.converted is not None
    recorded = contract.converted.settings.get("op_control_files") or {}
    return {key: str(text) for key, text in recorded.items() if key in CONTROL_FILE_NAMES}


def _write_op_control_files(controls: dict[str, str], folder: Path) -> dict[str, Path]:
    files = {}
    for key, text in controls.items():
        path = folder / CONTROL_FILE_NAMES[key]
        path.write_text(text, encoding="utf-8")
        files[key] = path
    return files


def _allowed(contract: ModelContract) -> bool:
    """Whether the conversion went on past refusals (--allow-unsupported): the emulation must too."""
    assert contract.converted is not None
    plan = contract.converted.plan()
    return plan is not None and bool(plan.allowed_unsupported)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed: a copy
        shutil.copyfile(source, target)


def emulated_model(contract: ModelContract, manifest: DatasetManifest, cache_root: Path, *,
                   fp32: bool = False) -> tuple[ModelContract, Path]:
    """The stand-in's emulation of the contract's precision mode: the pb converted with tf2onnx in the same
    precision mode, with the same chip's precision plan (same --input-fp16-nodes, --output-type and per-op precision
    files), cached under `cache_root`/emulated/<sha256 of pb, settings and dataset>/, like the golden outputs.
    `fp32`: the same conversion in force_fp32 instead, no input, output or op held in fp16 (what the model
    computes without fp16, for `infer.compare._judge.fp16_trouble`). Returns the emulated model's contract and the
    folder its runs go in."""
    precision_mode, fp16_nodes, output_type, chip = _emulation_settings(contract)
    controls = _op_control_files(contract)  # --keep-dtype and the like, replayed from their recorded texts
    if fp32:
        precision_mode, fp16_nodes, output_type, controls = FP32_MODES[0], "", "", {}
    contract.check_pb_unchanged()
    aipp = model_aipp(contract)  # the om's AIPP goes in front of the emulation too: it takes the same uint8 bins
    aipp_text = "" if aipp is None else aipp.to_prototxt()
    digest = hashlib.sha256("\0".join((contract.pb_sha256, precision_mode, fp16_nodes, output_type, chip,
                                       str(_allowed(contract)),
                                       sha256_file(manifest.path), aipp_text,
                                       *(f"{k}={v}" for k, v in sorted(controls.items())))).encode())
    folder = cache_root / _EMULATED / digest.hexdigest()[:32]
    model = folder / "model"
    converted_json = model / "model.json"
    staged = load_contract(converted_json) if converted_json.is_file() else None
    if staged is None or staged.converted is None:
        model.mkdir(parents=True, exist_ok=True)
        pb = model / Path(contract.pb).name
        if not pb.is_file():
            _link_or_copy(contract.pb_path, pb)
        staged = replace(contract, path=converted_json, pb=pb.name, converted=None).save()
        aipp_options = None
        if aipp is not None:
            (model / "om-aipp.cfg").write_text(aipp_text, encoding="utf-8")
            aipp_options = AippOptions(config=model / "om-aipp.cfg")
        files = _write_op_control_files(controls, model)
        staged = convert_model(staged, ConvertOptions(
            target="onnx", precision_mode=cast(PrecisionMode, precision_mode),  # ConvertOptions checks it
            input_fp16_nodes=fp16_nodes, output_type=output_type,
            soc_version=chip, allow_unsupported=_allowed(contract), aipp=aipp_options,
            keep_dtype=files.get("keep_dtype"), modify_mixlist=files.get("modify_mixlist"),
            customize_dtypes=files.get("customize_dtypes"))).contract
    return staged, folder / "runs"


def emulated_run(contract: ModelContract, manifest: DatasetManifest, cache_root: Path,
                 progress: Callable[[int, int], None] | None = None, *,
                 fp32: bool = False) -> tuple[ModelContract, Path]:
    """The run folder of the stand-in's emulation (`emulated_model`, in fp32 where asked) over these bins, run by
    ONNX Runtime and cached beside it. Returns the emulated model's contract and its run folder."""
    staged, runs = emulated_model(contract, manifest, cache_root, fp32=fp32)
    cached = cached_run(runs)
    if cached is not None:
        return staged, cached
    # The emulated model is another model of the same pb on purpose, fed the converted model's bins.
    options = RunOptions(backend="onnxrt", bins_made_for=manifest.model_sha256)
    return staged, run_model(staged.path, manifest.root, runs, options, progress=progress).folder
