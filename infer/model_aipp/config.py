"""AIPP for a model: the user's choices (`AippOptions`), the config they give for the contract's input, and the
AIPP a converted model records in model.json.

One source of truth: `--aipp` takes the same ``--mean/--std/--scale/--color`` as `infer dump-bin` (an
`ImageOptions`), so the AIPP config is made from the preprocessing the model was trained with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atc_wrap.aipp.config import AippConfig, Normalisation, aipp_from_preprocessing, check_against_input
from atc_wrap.aipp.parse import parse_aipp_text, read_aipp_config
from atc_wrap.errors import ConvertError
from binio.spec import TensorSpec, format_shape
from infer.contract import ModelContract
from infer.model_aipp.options import AippOptions

AIPP_FILE = "aipp.cfg"
# What AIPP cannot do, so what stays host-side or is refused: said in model.json and the README.
NOT_EXPRESSIBLE: tuple[str, ...] = (
    "resize (AIPP crops and pads but does not resize): dump-bin resizes host-side to the source size",
    "per-pixel mean images: mean_chn/min_chn are one value per channel",
    "a negative mean / scale: mean_chn and min_chn only subtract",
)


def image_dims(spec: TensorSpec) -> tuple[int, int, int]:
    """(height, width, channels) of a 4-D image input, by its layout (NHWC unless it says NCHW)."""
    if len(spec.shape) != 4 or any(d is None for d in spec.shape[1:]):
        raise ConvertError(f"AIPP: input {spec.name} {format_shape(spec.shape)} is not a 4-D image input with "
                           "static H, W and C")
    dims = [int(d or 0) for d in spec.shape[1:]]
    if spec.layout == "NCHW":
        return dims[1], dims[2], dims[0]
    return dims[0], dims[1], dims[2]


def aipp_config_for(contract: ModelContract, options: AippOptions) -> AippConfig:
    """The checked AIPP config for the contract's input: generated from the preprocessing, or read from a file."""
    options.check()
    if options.config is not None:
        config = read_aipp_config(options.config)
        rank = config.related_input_rank
        if rank >= len(contract.inputs):
            raise ConvertError(f"{options.config}: related_input_rank {rank}, the model has "
                               f"{len(contract.inputs)} input(s)")
        height, width, channels = image_dims(contract.inputs[rank])
        return check_against_input(config, contract.inputs[rank].name, height, width, channels,
                                   str(options.config))
    if options.input_rank >= len(contract.inputs):
        raise ConvertError(f"AIPP input {options.input_rank}: the model has {len(contract.inputs)} input(s)")
    spec = contract.inputs[options.input_rank]
    height, width, channels = image_dims(spec)
    prep = options.preprocessing
    input_format = options.input_format or ("YUV400_U8" if channels == 1 else "RGB888_U8")
    config = aipp_from_preprocessing(
        input_format=input_format, height=height, width=width, channels=channels, color=prep.color,
        normalisation=Normalisation(scale=prep.scale, mean=prep.mean, std=prep.std), src_size=options.src_size,
        crop_start=options.crop, csc=options.csc, related_input_rank=options.input_rank)
    _check_generated(config)
    return config


def _check_generated(config: AippConfig) -> None:
    """What infer writes passes the checks a hand-written config passes (ATC's documented ranges, among them):
    the generated file is read back by the same parser before anything is written."""
    try:
        parse_aipp_text(config.to_prototxt(), Path(AIPP_FILE))
    except ConvertError as exc:
        raise ConvertError(f"--aipp: the {AIPP_FILE} these settings make would be refused: {exc.message}",
                           hint="check --aipp-src-size and --aipp-crop, and the --mean/--std/--scale it is made "
                                "from ([convert] aipp_* and [data.preprocessing] in a pipeline file)") from None


def aipp_record(config: AippConfig, options: AippOptions, config_file: str) -> dict[str, Any]:
    """What model.json keeps under ``converted.settings.aipp``."""
    prep = options.preprocessing
    return {
        "file": config_file, "config": config.to_json(),
        "source": str(options.config) if options.config is not None else "generated",
        "generated_from": None if options.config is not None else {
            "mean": list(prep.mean), "std": list(prep.std), "scale": prep.scale, "color": prep.color},
        "order": "channel swap -> crop -> colour-space conversion -> normalisation; output stored as fp16",
        "not_expressible": list(NOT_EXPRESSIBLE),
    }


def model_aipp(contract: ModelContract) -> AippConfig | None:
    """The AIPP the converted model has, from model.json; None for a model converted without it."""
    config = contract.converted.aipp_config if contract.converted is not None else None
    return None if config is None else AippConfig.from_json(config)
