"""`infer demo`: builds the demo checkpoint and dataset, writes them a pipeline.toml, and runs every stage.

The demo is an ordinary pipeline: what it runs is ``OUT/pipeline.toml``, which the user can edit and re-run with
`infer pipeline run`, and the report it ends with lists the same stages as `infer ...` commands.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from binio.errors import InferError
from infer.demo._dataset import DemoDataset, write_dataset
from infer.demo._model import DemoModel, build_demo_model
from infer.pipeline import PipelineResult, StageOutcome, TemplateValues, run_pipeline, tune_inputs, write_template
from infer.pipeline.config import load_config

if TYPE_CHECKING:
    from infer.tune import TuneResult

PIPELINE_FILE = "pipeline.toml"
DEMO_SOC_VERSION = "Ascend310"  # the chip the report's "by hand" ATC command names; edit it for yours
DEMO_BATCH = 8
DEMO_SAMPLES = 60  # not a multiple of the batch: the last batch is padded, and compare leaves the padding out


TROUBLE = "-fp16-trouble"  # the fp16-trouble variant's checkpoint, pipeline file and work folder carry it


@dataclass(frozen=True)
class DemoResult:
    out_dir: Path
    model: DemoModel
    dataset: DemoDataset
    pipeline_file: Path
    pipeline: PipelineResult  # the last run: for --fp16-trouble, the one with tune-precision's keep_dtype file
    failed_first: PipelineResult | None = None  # --fp16-trouble: the run that fails under force_fp16
    tuned: TuneResult | None = None  # --fp16-trouble: what tune-precision found
    failed_report: Path | None = None  # --fp16-trouble: the failed run's HTML report, kept beside the passing one

    def __bool__(self) -> bool:
        return self.pipeline.passed


def demo_values(out_dir: Path, model: DemoModel, dataset: DemoDataset, *, aipp: bool = False,
                work_dir: str = "work", layerwise: bool = False, keep_dtype: str = "") -> TemplateValues:
    def relative(path: Path) -> str:
        return os.path.relpath(path, out_dir)

    return TemplateValues(
        source=relative(model.prefix), outputs=(model.output,), inputs=(model.input,), batch=DEMO_BATCH,
        set_values={model.switch.split(":")[0]: "false"}, data_source=relative(dataset.image_folder) + "/",
        scale=1 / 255, labels=relative(dataset.labels_path), work_dir=work_dir, layerwise=layerwise,
        keep_dtype=keep_dtype,
        notes=("Written by `infer demo`: a small ResNet-style checkpoint and a labelled image set whose class",
               "is the colour of the shape in the image (ground truth from the rule that drew it)."),
        switches=(model.switch,), aipp=aipp, soc_version=DEMO_SOC_VERSION,
    )


def run_demo(out_dir: Path, *, on_step: Callable[[str], None] | None = None,
             on_stage: Callable[[StageOutcome], None] | None = None, aipp: bool = False,
             fp16_trouble: bool = False) -> DemoResult:
    """Builds the checkpoint (seeded, trained a few seconds) and the images, then runs the pipeline on them.

    A second run in the same folder rebuilds the same bytes, so the pipeline skips every stage that follows.
    With `aipp`, the pipeline converts with ``[convert] aipp = true``: the model takes uint8 images and the NPU
    (the stand-in's AIPP stage) does the scaling. With `fp16_trouble`, the model L2-normalises its features on a
    scale fp16 overflows: the pipeline fails under force_fp16 and compare --layerwise names the op, tune-precision
    finds the ops to keep in fp32, and the pipeline run again with its keep_dtype file passes.
    """
    say = on_step or (lambda line: None)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InferError(f"-o {out_dir}: is a file; the demo writes into a folder", hint="-o a new or demo folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = TROUBLE if fp16_trouble else ""
    model = build_demo_model(out_dir / f"checkpoint{suffix}", fp16_trouble=fp16_trouble)
    trouble = ", its features L2-normalised on a scale past fp16's range" if fp16_trouble else ""
    say(f"checkpoint  {model.prefix}: ResNet-style, batch None, is_training switch, {len(model.classes)} classes "
        f"(train accuracy {100 * model.train_accuracy:.0f}%){trouble}")
    dataset = write_dataset(out_dir / "dataset", count=DEMO_SAMPLES)
    say(f"dataset     {len(dataset.images)} PNG images in {dataset.image_folder}, labels in "
        f"{dataset.labels_path.name} ({', '.join(dataset.classes)})")
    values = demo_values(out_dir, model, dataset, aipp=aipp, work_dir=f"work{suffix}", layerwise=fp16_trouble)
    pipeline_file = write_template(out_dir / f"pipeline{suffix}.toml", values, force=True)
    result = run_pipeline(load_config(pipeline_file), on_stage=on_stage)
    if not fp16_trouble:
        return DemoResult(out_dir=out_dir, model=model, dataset=dataset, pipeline_file=pipeline_file,
                          pipeline=result)
    return _fix_the_trouble(out_dir, model, dataset, pipeline_file, result, values, say, on_stage)


def _fix_the_trouble(out_dir: Path, model: DemoModel, dataset: DemoDataset, pipeline_file: Path,
                     failed: PipelineResult, values: TemplateValues, say: Callable[[str], None],
                     on_stage: Callable[[StageOutcome], None] | None) -> DemoResult:
    """What a user does next: tune-precision on the pipeline's work, its keep_dtype file into [convert], run again."""
    from dataclasses import replace

    from infer.tune import tune_precision

    failed_report = _keep_the_failed_report(failed, say)
    config = load_config(pipeline_file)
    contract, bins, output = tune_inputs(config)
    say("tune-precision: the ops to keep in fp32 (each candidate a stand-in conversion, run and compared)")
    tuned = tune_precision(contract, bins, output, replace(config.tune, force=True))
    kept = ", ".join(f"{op.name} ({op.op_type})" for op in tuned.ops) or "none"
    say(f"tune-precision: {'found' if tuned.found else 'NOT FOUND'} in {len(tuned.candidates)} candidates: {kept}; "
        f"keep_dtype file {output / 'keep_dtype.cfg'}")
    if not tuned.found:
        return DemoResult(out_dir=out_dir, model=model, dataset=dataset, pipeline_file=pipeline_file,
                          pipeline=failed, failed_first=failed, tuned=tuned, failed_report=failed_report)
    keep_dtype = os.path.relpath(output / "keep_dtype.cfg", out_dir)
    write_template(pipeline_file, replace(values, keep_dtype=keep_dtype), force=True)
    say(f"again, with [convert] keep_dtype = \"{keep_dtype}\" in {pipeline_file.name}:")
    fixed = run_pipeline(load_config(pipeline_file), on_stage=on_stage)
    return DemoResult(out_dir=out_dir, model=model, dataset=dataset, pipeline_file=pipeline_file, pipeline=fixed,
                      failed_first=failed, tuned=tuned, failed_report=failed_report)


# Beside the work folder's report: the failed run's, which the fixed run's would replace.
FAILED_REPORT = "report-force_fp16"


def _keep_the_failed_report(failed: PipelineResult, say: Callable[[str], None]) -> Path | None:
    """Says why the run failed in the words a newcomer needs (the cause compare named from the outputs, the op
    --layerwise found, 65504), and moves its reports aside so that the passing run's do not replace them; returns
    the failed run's HTML report there."""
    import shutil

    from binio.reading import parse_json, read_text_file

    if failed.report_html is None:
        say(f"under force_fp16: {failed.verdict.split(' | ')[0]}")
        return None
    folder = failed.report_html.parent
    report = folder / "report.json"
    document = parse_json(read_text_file(report, what="compare's report"), named=str(report),
                          what="compare's report")
    say(f"under force_fp16: {document['headline']}")
    for trouble in document.get("fp16_trouble") or ():
        say(f"  why: {trouble['text']}")
    first = (document.get("layerwise") or {}).get("nonfinite")
    if first:
        say(f"  where: --layerwise found the first inf in {first['tensor']} ({first['op_type']}), {first['cause']}: "
            f"{first['detail']}")
    kept = folder.parent / FAILED_REPORT
    if kept.exists():  # the demo's own, from an earlier run
        shutil.rmtree(kept)
    folder.rename(kept)
    say(f"  report: {kept / failed.report_html.name}")
    return kept / failed.report_html.name
