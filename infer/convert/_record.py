"""What model.json records of a conversion (`converted`), written from its plan and what the converter did, in one
place for both targets: the settings record (the options as the plan read them, the converter's own), the converted
model's inputs and outputs, its precision plan and its gears."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from atc_wrap.atc.command import om_inputs, om_outputs
from atc_wrap.atc.run import AtcRun
from atc_wrap.plan import ConversionPlan
from atc_wrap.standin.convert import OnnxConversion
from binio.binfile import sha256_file
from infer.contract import ConvertedInfo, ModelContract
from infer.model_aipp import AippOptions, aipp_record


def converted_info(contract: ModelContract, plan: ConversionPlan, done: AtcRun | OnnxConversion, *,
                   atc: Path | str | None = None, aipp: AippOptions | None = None) -> ConvertedInfo:
    """model.json's `converted` for the plan carried out (`done`: ATC's run, found at `atc`, or the stand-in's
    conversion); `aipp` the options AIPP's config was made from, for its record."""
    folder = contract.folder
    given = {"input_fp16_nodes": ";".join(plan.fp16_inputs), "output_type": plan.output_type, **_gears(plan)}
    controls = {"keep_dtype": _path(plan.keep_dtype), "modify_mixlist": _path(plan.modify_mixlist),
                "customize_dtypes": _path(plan.customize_dtypes), "op_control_files": dict(plan.controls.texts)}
    settings: dict[str, Any]
    if isinstance(done, AtcRun):
        settings = {"converter": "atc", "atc": str(atc), "cwd": str(plan.artefact.parent),
                    "input_format": plan.input_format, **given, "op_select_implmode": plan.implmode or "",
                    "fusion_switch_file": _path(plan.fusion_switch_file), **controls,
                    "atc_args": list(plan.extra_args), "seconds": round(done.seconds, 3),
                    "warnings": list(done.warnings)}
        inputs, outputs, command = om_inputs(plan), om_outputs(plan), done.argv
    else:
        settings = {**done.settings(), **given, "ignored_options": list(plan.ignored), **controls}
        inputs, outputs, command = done.inputs, done.outputs, ()
    if plan.aipp is not None and plan.aipp_file is not None and aipp is not None:
        settings["aipp"] = aipp_record(plan.aipp, aipp, _relative(plan.aipp_file, folder))
    return ConvertedInfo(
        target=plan.target, path=_relative(plan.artefact, folder), sha256=sha256_file(plan.artefact), inputs=inputs,
        outputs=outputs, soc_version=plan.soc_version,
        precision_mode=plan.precision_mode, command=command,
        settings=settings, precision_plan=plan.precision.to_json() if plan.precision is not None else None,
        gears=plan.gears,
    )


def _gears(plan: ConversionPlan) -> dict[str, object]:
    """The dynamic options as the plan read them."""
    request = plan.gear_request
    return {"dynamic_batch": list(request.dynamic_batch),
            "dynamic_image_size": [list(g) for g in request.dynamic_image_size],
            "dynamic_dims": [list(g) for g in request.dynamic_dims], "shape_range": request.shape_range_text()}


def _path(path: Path | None) -> str:
    return "" if path is None else str(path)


def _relative(path: Path, folder: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(folder).resolve())
