"""The library calls behind the freeze and compare stages, and ATC's command line for a model converted to the
stand-in: the parts of the pipeline that say most about the result, kept out of stages.py's bookkeeping."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from binio.spec import format_shape
from ckpt2pb.errors import UnsetSwitchError
from infer._option_fields import toml_text_value
from infer.compare import compare_outputs, write_reports
from infer.contract import load_contract
from infer.convert import ConvertOptions, convert_model
from infer.freeze import freeze_model
from infer.pipeline._work import StageDone, WorkLayout
from infer.pipeline.config import PRECISION_FILES, PipelineConfig

if TYPE_CHECKING:
    from infer.preprocessing import ImageOptions


def freeze(config: PipelineConfig, work: WorkLayout) -> str:
    """Freezes the model source into work/model (model.pb + model.json), verified; returns the stage's line."""
    options = config.model.freeze
    try:
        report = freeze_model(config.model_source, work.model_dir, replace(options, force=True))
    except UnsetSwitchError as exc:  # the fix is a line of this file, not a flag
        fixed = {**options.assignments, exc.placeholder: "false"}
        items = ", ".join(f"{k} = {toml_text_value(v)}" for k, v in sorted(fixed.items()))
        exc.hint = f"in {config.path} [model]: set = {{ {items} }}"
        raise
    contract = report.contract
    inputs = ", ".join(f"{s.name} {s.dtype}{format_shape(s.shape)}" for s in contract.inputs)
    folded = ", ".join(f"{k}={v}" for k, v in sorted(contract.fixed.items()))
    checked = "" if report.verification is None else f"; max |frozen - checkpoint| {report.verification.worst:.2g}"
    return (f"{work.pb.name}: {report.nodes} nodes, inputs {inputs}"
            f"{f', folded {folded}' if folded else ''}{checked}")


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def compare(config: PipelineConfig, work: WorkLayout, run_folder: Path) -> StageDone:
    """Compares the run against TensorFlow's outputs on the same bins and writes report.json/csv/html."""
    section = config.compare
    result = compare_outputs(work.contract, work.bins, run_folder, options=section, cache_root=work.golden_cache)
    paths = write_reports(result, work.report)
    html = next(p for p in paths if p.suffix == ".html")
    parts = []
    keys = load_contract(work.contract).signature_keys  # a SavedModel's outputs go by key in this file
    for output in result.outputs:
        metrics = output.metrics
        name = f"{keys[output.name]} ({output.name})" if output.name in keys else output.name
        text = f"{name} cosine {metrics.cosine_similarity:.7f}, max |diff| {metrics.max_absolute_error:.2g}"
        if output.topk is not None:
            text += f", top-1 agreement {_percent(output.topk.top1_agreement)}"
            accuracy = output.topk.accuracy
            if accuracy is not None:
                text += (f", accuracy TF {_percent(accuracy.golden_top1)} vs converted "
                         f"{_percent(accuracy.actual_top1)}")
        parts.append(text)
    if result.layerwise is not None and result.layerwise.diverges_at is not None:
        warning = " (warning: the outputs pass)" if result.layerwise.is_warning else ""
        parts.append(f"first diverging tensor {result.layerwise.diverges_at.tensor}{warning}")
    # a PASS on outputs that ignore the input proves little: said after the verdict it qualifies
    summary = "; ".join(parts) + f" -> {result.headline()}" + "".join(f"; warning: {t}" for t in result.warnings)
    if result.cause:  # what to do next, in this file's terms
        find = "" if result.layerwise is not None else "[compare] layerwise = true finds the op, "
        summary += f"; next: {find}infer pipeline tune {config.path} finds the ops to keep in fp32"
    return StageDone(summary, (work.report / "report.json",),
                     {"passed": result.passed, "verdict": result.verdict_line(), "report_html": str(html),
                      "headline": result.headline(), "details": list(result.details())})


def image_options(config: PipelineConfig) -> ImageOptions:
    """[data.preprocessing], which is dump-bin's image options (--aipp takes them too): one source of truth."""
    return config.data.dump.image


def convert_options(config: PipelineConfig) -> ConvertOptions:
    """[convert], which is `infer convert`'s options, with AIPP made from [data.preprocessing] (a hand-written
    aipp_config holds its own) and ATC on the Ascend host of [remote]."""
    convert = replace(config.convert, remote=config.remote)
    if convert.aipp is None or convert.aipp.config is not None:
        return convert
    return replace(convert, aipp=replace(convert.aipp, preprocessing=image_options(config)))


def precision_files(config: PipelineConfig) -> dict[str, Path]:
    """[convert]'s keep_dtype / modify_mixlist / customize_dtypes (resolved against the pipeline file)."""
    return {key: getattr(config.convert, key) for key in PRECISION_FILES if getattr(config.convert, key) is not None}


def atc_dry_run(config: PipelineConfig, work: WorkLayout) -> tuple[str, ...]:
    """The ATC command `infer convert --target om` would run for this pipeline's model, without running it."""
    options = replace(convert_options(config), target="om", dry_run=True, opset=None,
                      output=work.model_dir / "model.om", remote=None)
    contract = load_contract(work.contract)
    result = convert_model(replace(contract, converted=None), options)
    return tuple(result.command)
