"""What `infer dump-bin` is asked to do (DumpOptions, with the images' `infer.preprocessing.ImageOptions` inside):
kept apart from the readers and writers (numpy, PIL), so the command line, the pipeline file and the Python API
decode into the same types without importing them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from binio.errors import InferError
from binio.gears import parse_gear_list
from infer._option_fields import setting
from infer.preprocessing import ImageOptions


def _one_gear(text: str, flag: str, width: int | None) -> tuple[int, ...]:
    gears = parse_gear_list(text, option=flag, width=width)
    if len(gears) != 1:
        raise InferError(f"{flag} {text!r}: expected one gear (a dataset is one gear), found {len(gears)}",
                         hint="dump one dataset per gear")
    return gears[0]


def _image_size(text: str, flag: str) -> tuple[int, int]:
    """``224,448`` -> (224, 448): H,W."""
    height, width = _one_gear(text, flag, 2)
    return height, width


def _dims(text: str, flag: str) -> tuple[int, ...]:
    """``20,20,1,1`` -> one value per unknown dim."""
    return _one_gear(text, flag, None)


@dataclass(frozen=True)
class DumpOptions:
    """dump-bin's options; the image preprocessing is `image` ([data.preprocessing] in pipeline.toml). In
    pipeline.toml: [data], which also names the source; the pipeline gives the output folder and the batch."""

    output: Path | None = setting(None, short="-o", toml=False, required=True, help="The dataset folder to write.")
    # (input name, source); an empty name is the lone SOURCE argument (the command line's SOURCE and --source)
    sources: tuple[tuple[str, str], ...] = setting((), flag=False, toml=False)
    dtype: str | None = setting(None, unset="", shown="the converted model's input dtype",
                                help="The dtype to write; refused unless it is the model's input dtype.")
    batch: int | None = setting(None, toml=False, shown="the model's",
                                help="Samples per file; needed only when the model's batch is dynamic (one of "
                                     "its batch gears when it has them).")
    image_size: tuple[int, int] | None = setting(None, toml=False, parse=_image_size,
                                                 help="H,W: the image size gear to write, for a model converted "
                                                      "with --dynamic-image-size; images are resized to it.")
    dims: tuple[int, ...] = setting((), toml=False, parse=_dims,
                                    help="The dims gear to write, one value per unknown dim (a model converted "
                                         "with --dynamic-dims or --shape-range).")
    layout: str | None = setting(None, unset="", shown="the model's", help="NHWC or NCHW, for images.")
    image: ImageOptions = setting(default_factory=ImageOptions, toml="preprocessing")
    samples: int | None = setting(None, unset=0, shown="all",
                                  help="Only the first N samples (a generator-only dataset: how many).")
    allow_lossy: bool = setting(False, help="Write values the cast loses (fp16 overflow, NaN...) instead of "
                                            "refusing.")
    force: bool = setting(False, toml=False, help="Overwrite OUTPUT; files whose contents match are kept.")
    workers: int = setting(1, help="Image decoding processes.")
