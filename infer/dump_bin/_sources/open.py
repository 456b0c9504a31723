"""From the text a user typed (a path or a generator) to the source that reads it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from binio.layouts import ImageLayout
from binio.regular import refuse_special
from binio.spec import format_shape
from infer._option_fields import setting_of
from infer.dump_bin._sources.arrays import NpySource, NpzSource
from infer.dump_bin._sources.base import SampleSource
from infer.dump_bin._sources.generators import GeneratedSource, is_generator
from infer.dump_bin.errors import SourceError
from infer.preprocessing import COLORS, ImageOptions

if TYPE_CHECKING:
    from infer.dump_bin._sources.images import ImagePreprocessing

# The folder sources (images, bins) are imported when a folder is opened: an .npy dump does without them.

__all__ = ["COLORS", "ImageOptions", "image_preprocessing", "open_source"]


def _listed(values: tuple[float, ...]) -> str:
    return ",".join(f"{v:g}" for v in values)


def image_preprocessing(folder: Path, tensor: str, sample_shape: tuple[int, ...], layout: ImageLayout,
                        options: ImageOptions) -> ImagePreprocessing:
    """The preprocessing that makes the images in `folder` into samples of `sample_shape` (HWC for NHWC, CHW for
    NCHW)."""
    if len(sample_shape) != 3:
        raise SourceError(f"{folder}: a folder of images for input {tensor}, which is not an image input: images "
                          f"need a 4-D input (N,H,W,C or N,C,H,W), its samples have shape {format_shape(sample_shape)}")
    height, width, channels = sample_shape if layout == "NHWC" else (*sample_shape[1:], sample_shape[0])
    if channels not in (1, 3):
        raise SourceError(f"{folder}: images give 1 or 3 channels, input {tensor} takes {channels} "
                          f"(layout {layout}, sample shape {format_shape(sample_shape)})", hint="check --layout")
    for what, values in (("--mean", options.mean), ("--std", options.std)):
        if len(values) not in (1, channels):
            raise SourceError(f"{what} {_listed(values)}: expected 1 value or {channels} (one per channel), "
                              f"found {len(values)}")
    if options.resize is not None and options.resize < min(height, width):
        raise SourceError(f"--resize {options.resize}: the shorter side would be smaller than the {height}x{width} "
                          f"centre crop input {tensor} takes", hint=f"--resize {max(height, width)} or more, or leave "
                                                                     "it out (just enough for the crop)")
    if any(s == 0 for s in options.std):
        raise SourceError(f"--std {_listed(options.std)}: a value is 0, which would divide by zero")
    from infer.dump_bin._sources.images import ImagePreprocessing

    return ImagePreprocessing(height=height, width=width, channels=channels, resize=options.resize,
                              color=options.color, scale=options.scale, mean=options.mean, std=options.std,
                              layout=layout)


def reads_images(text: str) -> bool:
    """Whether the source `text` names is a folder of images (not of bins, not an array, not a generator)."""
    if is_generator(text) or not Path(text).is_dir():
        return False
    from infer.dump_bin._sources.bins import has_bins

    return not has_bins(Path(text))


def refuse_unused_preprocessing(options: ImageOptions, sources: list[str]) -> None:
    """Refuses image preprocessing (--scale, --mean, ...) asked for where no source is a folder of images: an
    array's or a bin folder's values are written as they are, so the options would be silently ignored. (A model
    converted with AIPP declares them for the NPU whatever the source: not refused there.)"""
    given = [f"{setting_of(item).flag} {_shown(getattr(options, item.name))}" for item in dataclasses.fields(options)
             if getattr(options, item.name) != getattr(ImageOptions(), item.name)]
    if not given or any(reads_images(text) for text in sources):
        return
    raise SourceError(f"{', '.join(given)}: image preprocessing applies to a folder of images only; the source "
                      f"{sources[0]} is {'an array' if sources[0].endswith(('.npy', '.npz')) else 'not one'}, whose "
                      "values are written as they are", hint="leave them out ([data.preprocessing] in a pipeline "
                                                            "file), or apply them to the array before dump-bin")


def _shown(value: object) -> str:
    if isinstance(value, tuple):
        return _listed(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def open_source(text: str, *, tensor: str, sample_shape: tuple[int, ...], dtype_name: str, layout: ImageLayout,
                single_input: bool, image_options: ImageOptions, workers: int = 1) -> SampleSource:
    """The source `text` names, for the model input `tensor` (whose samples have `sample_shape`)."""
    if is_generator(text):
        return GeneratedSource(text, sample_shape, dtype_name)
    path = Path(text)
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder",
                          hint="a source is a .npy, .npz, a folder of images or .bin files, const:V or random:SEED")
    refuse_special(path, "a .npy, .npz or a folder")
    if path.is_dir():
        from infer.dump_bin._sources.bins import BinFolderSource, has_bins
        from infer.dump_bin._sources.images import ImageFolderSource

        if has_bins(path):
            return BinFolderSource(path, tensor, sample_shape, dtype_name, single_input=single_input)
        prep = image_preprocessing(path, tensor, sample_shape, layout, image_options)
        return ImageFolderSource(path, prep, workers=workers)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return NpySource(path)
    if suffix == ".npz":
        return NpzSource(path, tensor, single_input=single_input)
    raise SourceError(f"{path}: not a source dump-bin reads (expected .npy, .npz, a folder, const:V or random:SEED)")
