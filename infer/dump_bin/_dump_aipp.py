"""dump-bin for a model converted with AIPP: the AIPP input's images as the converted model takes them (source
size, uint8, its colour format), and the preprocessing dump-bin's options declare for them.

Imported only for such a model (model.json records the AIPP), so that the common dump does not load the AIPP
modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atc_wrap.aipp.config import AippConfig, csc_standard
from infer.contract import ModelContract
from infer.dump_bin._sources.aipp_images import AippImageSource, csc_of, source_channels
from infer.dump_bin._sources.bins import has_bins
from infer.dump_bin.options import DumpOptions
from infer.model_aipp.config import image_dims, model_aipp
from infer.model_aipp.declared import DeclaredPreprocessing


def _aipp_input(contract: ModelContract) -> tuple[str, AippConfig] | None:
    """(the input's name, its AIPP config) for a model converted with AIPP."""
    config = model_aipp(contract)
    return None if config is None else (contract.inputs[config.related_input_rank].name, config)


def aipp_image_source(contract: ModelContract, tensor: str, folder: Path,
                      options: DumpOptions) -> AippImageSource | None:
    """The source of the AIPP input `tensor` when `folder` is a folder of images; None for any other input or
    source (those open as for any model)."""
    found = _aipp_input(contract)
    if found is None or found[0] != tensor or not folder.is_dir() or has_bins(folder):
        return None
    return AippImageSource(folder, found[1], options.image, workers=options.workers)


def declared_preprocessing(contract: ModelContract, options: DumpOptions) -> dict[str, dict[str, Any]]:
    """The AIPP input's declared preprocessing (dump-bin's own --mean/--std/--scale/--color), by input name."""
    found = _aipp_input(contract)
    if found is None:
        return {}
    name, config = found
    if config.is_yuv and csc_standard(config) is None:  # YUV bins from a decoder: no known way back to RGB
        return {}
    spec = contract.inputs[config.related_input_rank]
    height, width, _ = image_dims(spec)
    channels = source_channels(config)
    declared = DeclaredPreprocessing.from_options(options.image, channels, height, width, spec.layout,
                                                  csc_of(config) if channels in ("NV12", "NV21") else ((), ()))
    return {name: declared.to_json()}
