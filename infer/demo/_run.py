"""`infer demo`: builds the demo checkpoint and dataset, writes them a pipeline.toml, and runs every stage.

The demo is an ordinary pipeline: what it runs is ``OUT/pipeline.toml``, which the user can edit and re-run with
`infer pipeline run`, and the report it ends with lists the same stages as `infer ...` commands.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from binio.errors import InferError
from infer.demo._dataset import DemoDataset, write_dataset
from infer.demo._model import DemoModel, build_demo_model
from infer.pipeline import PipelineResult, StageOutcome, TemplateValues, run_pipeline, write_template
from infer.pipeline.config import load_config

PIPELINE_FILE = "pipeline.toml"
DEMO_SOC_VERSION = "Ascend310"  # the chip the report's "by hand" ATC command names; edit it for yours
DEMO_BATCH = 8
DEMO_SAMPLES = 60  # not a multiple of the batch: the last batch is padded, and compare leaves the padding out


@dataclass(frozen=True)
class DemoResult:
    out_dir: Path
    model: DemoModel
    dataset: DemoDataset
    pipeline_file: Path
    pipeline: PipelineResult

    def __bool__(self) -> bool:
        return self.pipeline.passed


def demo_values(out_dir: Path, model: DemoModel, dataset: DemoDataset, *, aipp: bool = False) -> TemplateValues:
    def relative(path: Path) -> str:
        return os.path.relpath(path, out_dir)

    return TemplateValues(
        source=relative(model.prefix), outputs=(model.output,), inputs=(model.input,), batch=DEMO_BATCH,
        set_values={model.switch.split(":")[0]: "false"}, data_source=relative(dataset.image_folder) + "/",
        scale=1 / 255, labels=relative(dataset.labels_path), work_dir="work",
        notes=("Written by `infer demo`: a small ResNet-style checkpoint and a labelled image set whose class",
               "is the colour of the shape in the image (ground truth from the rule that drew it)."),
        switches=(model.switch,), aipp=aipp, soc_version=DEMO_SOC_VERSION,
    )


def run_demo(out_dir: Path, *, on_step: Callable[[str], None] | None = None,
             on_stage: Callable[[StageOutcome], None] | None = None, aipp: bool = False) -> DemoResult:
    """Builds the checkpoint (seeded, trained a few seconds) and the images, then runs the pipeline on them.

    A second run in the same folder rebuilds the same bytes, so the pipeline skips every stage that follows.
    With `aipp`, the pipeline converts with ``[convert] aipp = true``: the model takes uint8 images and the NPU
    (the stand-in's AIPP stage) does the scaling.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InferError(f"-o {out_dir}: is a file; the demo writes into a folder", hint="-o a new or demo folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    model = build_demo_model(out_dir / "checkpoint")
    if on_step is not None:
        on_step(f"checkpoint  {model.prefix}: ResNet-style, batch None, is_training switch, "
                f"{len(model.classes)} classes (train accuracy {100 * model.train_accuracy:.0f}%)")
    dataset = write_dataset(out_dir / "dataset", count=DEMO_SAMPLES)
    if on_step is not None:
        on_step(f"dataset     {len(dataset.images)} PNG images in {dataset.image_folder}, labels in "
                f"{dataset.labels_path.name} ({', '.join(dataset.classes)})")
    pipeline_file = write_template(out_dir / PIPELINE_FILE, demo_values(out_dir, model, dataset, aipp=aipp),
                                   force=True)
    config = load_config(pipeline_file)
    result = run_pipeline(config, on_stage=on_stage)
    return DemoResult(out_dir=out_dir, model=model, dataset=dataset, pipeline_file=pipeline_file, pipeline=result)
