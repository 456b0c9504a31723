"""A folder of images (JPEG, PNG, BMP) as samples: decoded, resized, centre-cropped and normalised.

Files are taken in natural order of their path under the folder (``img_2.png`` before ``img_10.png``, the order a
folder of bare bins is read in), recorded in the manifest, so a re-run, another machine or the compare report sees
the same sample at the same index. Decoding can run in worker processes
(``--workers``): Pillow holds the GIL while it decodes, so threads would not help.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from binio.errors import excerpt
from binio.heap import as_this_process
from binio.layouts import ImageLayout
from binio.name_column import NameColumn
from binio.regular import refuse_special
from infer.dump_bin._sources.jpeg_scans import MAX_SCANS, count_scans
from infer.dump_bin._sources.order import (
    NATURAL_ORDER,
    named_by,
    natural_path_key,
    natural_sort_text,
    orders_as_text,
)
from infer.dump_bin.errors import SourceError
from infer.preprocessing import Color

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
_TASK_FILES = 4  # images per task sent to a worker: enough to amortise the pickling of the result
_TASKS_AHEAD = 4  # tasks in flight per worker: keeps workers busy while memory stays a few batches
MAX_PIXELS = 89_478_485  # Pillow's default MAX_IMAGE_PIXELS, where a user's code has set it to None


@dataclass(frozen=True)
class ImagePreprocessing:
    """How an image becomes a sample: ``(pixel * scale - mean) / std`` after resize and centre crop."""

    height: int
    width: int
    channels: int = 3  # 1 = grayscale
    resize: int | None = None  # shorter side before the crop; None = just large enough for the crop
    color: Color = "RGB"
    scale: float = 1.0
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    layout: ImageLayout = "NHWC"

    @property
    def keeps_pixels(self) -> bool:
        """No arithmetic on the values: samples stay uint8 (4x less to move between processes, cast exactly)."""
        return self.scale == 1.0 and all(m == 0.0 for m in self.mean) and all(s == 1.0 for s in self.std)

    @property
    def sample_dtype(self) -> np.dtype:
        return np.dtype(np.uint8 if self.keeps_pixels else np.float32)

    @property
    def sample_shape(self) -> tuple[int, ...]:
        if self.layout == "NCHW":
            return (self.channels, self.height, self.width)
        return (self.height, self.width, self.channels)

    def to_json(self) -> dict[str, Any]:
        found = asdict(self)
        found["resize"] = self.resize or max(self.height, self.width)
        found["mean"] = list(self.mean)
        found["std"] = list(self.std)
        found["crop"] = "centre"
        found["resample"] = "bilinear"
        return found


def list_images(folder: Path) -> list[Path]:
    """Every image under `folder` in natural order of its relative path, folder by folder: a stable order on every
    machine, and the one people number their files in (a plain sort puts img_10 before img_2)."""
    return [folder / name for name in list_image_names(folder)]


def list_image_names(folder: Path) -> NameColumn:
    """`list_images` as relative paths in text (``a/b.png``): what ``rglob`` and ``is_file`` find, hidden files
    and folders left out, links to folders not entered. Names equal in natural order (``img_1.png``,
    ``img_01.png``) come in the order of their text. A folder of 50,000 images is sorted as one short string a
    name, its key with the name in it, and kept as a `NameColumn`, not Paths (issue 42: dump-bin's peak grew with
    the count)."""
    keyed: list[str] = []
    names = _image_names(str(folder), "")
    for name in names:
        if not orders_as_text((name,)):  # a name holding U+0000-U+0002, which no text key can order
            return _sorted_by_tuples([*map(named_by, keyed), name, *names])
        keyed.append(natural_sort_text(name))
    keyed.sort()
    return NameColumn(_names_taken(keyed))


def _names_taken(keyed: list[str]) -> Iterator[str]:
    """The names of the sorted `keyed`, first to last, each string let go as its name is taken: the names and
    their keys are never all held at once."""
    keyed.reverse()
    while keyed:
        yield named_by(keyed.pop())


def _sorted_by_tuples(names: list[str]) -> NameColumn:
    shared: dict[str, str] = {}
    names.sort(key=lambda name: (natural_path_key(name, shared), name))
    return NameColumn(names)


def _image_names(folder: str, prefix: str) -> Iterator[str]:
    """The images under `folder`, its subfolders after it: the listing is read one entry at a time (not 50,000
    entries held at once), and only subfolders' names kept for later."""
    below: list[str] = []
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                name = entry.name
                if name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    below.append(name)
                elif _suffix(name).lower() in IMAGE_SUFFIXES and entry.is_file():
                    yield prefix + name
    except OSError:  # an unreadable folder: rglob passes over it too
        return
    for name in below:
        yield from _image_names(os.path.join(folder, name), prefix + name + "/")


def _suffix(name: str) -> str:
    """`PurePath.suffix` of a file name: from its last dot, unless the dot starts or ends the name."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def decode_image(path: str | Path, prep: ImagePreprocessing) -> np.ndarray:
    """One sample in `prep.layout`, uint8 when no arithmetic is asked for, else float32; an unreadable or
    truncated file raises SourceError naming it."""
    return normalise(crop_image(path, prep)[None], prep)[0]


def crop_image(path: str | Path, prep: ImagePreprocessing) -> np.ndarray:
    """The resized, centre-cropped pixels, uint8, height x width x channels in `prep.color`'s order: what a worker
    sends back (a quarter of the float32 sample's bytes); `normalise` does the arithmetic and the layout."""
    from PIL import Image

    wanted = "L" if prep.channels == 1 else "RGB"
    refuse_special(path, "an image")
    try:
        with Image.open(path) as opened:  # leaving it closes the file, and keeps the decoded pixels (Pillow >= 10)
            size = _checked_work(path, opened, prep)  # from the header: before a pixel is decoded
            opened.load()  # decodes now, so a truncated file fails here and not half-way into an array
            # convert() copies even to the mode the image has: a fifth of a 640x480 JPEG's decoding time, for nothing
            image = opened if opened.mode == wanted else opened.convert(wanted)
    except Image.DecompressionBombError as exc:  # over twice Pillow's limit: refused by Pillow itself at open
        raise SourceError(f"{path}: {exc}", hint="a decompression bomb, or an image far larger than a model "
                                                 "takes: resize it first") from None
    except (OSError, ValueError, SyntaxError) as exc:  # Pillow raises all three for broken files
        raise SourceError(f"{path}: cannot decode image ({excerpt(str(exc), 200)[1:-1]})") from None
    if size != image.size:
        image = image.resize(size, Image.Resampling.BILINEAR)
    left = (size[0] - prep.width) // 2
    top = (size[1] - prep.height) // 2
    image = image.crop((left, top, left + prep.width, top + prep.height))
    pixels: np.ndarray = np.asarray(image, dtype=np.uint8)
    if prep.channels == 1:
        pixels = pixels[:, :, None]
    elif prep.color == "BGR":
        pixels = pixels[:, :, ::-1]
    return pixels


# Modes whose pixels are not 8 bits: convert("L"/"RGB") would clip them to 255 without a word.
_WIDE_MODES = {"I": "32-bit integer", "F": "32-bit float", "I;16": "16-bit", "I;16L": "16-bit", "I;16B": "16-bit",
               "I;16N": "16-bit"}


def _checked_work(path: str | Path, opened: Any, prep: ImagePreprocessing) -> tuple[int, int]:
    """The size the image is resized to before the crop, from its header alone; refused, with the numbers, when
    decoding or resizing it would take more pixels than Pillow's own limit (a decompression bomb, or a 1 x 1,000,000
    strip whose shorter side resized to 16 is 16 x 16,000,000), or when its pixels are wider than the 8 bits read."""
    from PIL import Image

    if opened.mode in _WIDE_MODES:
        raise SourceError(f"{path}: a {_WIDE_MODES[opened.mode]} image (mode {opened.mode}); dump-bin reads 8-bit "
                          "pixels and would clip its values to 255",
                          hint="save the samples as a .npy of the values the model takes (dump-bin casts them to "
                               "its dtype), or scale the images to 8 bits first")
    width, height = opened.size
    limit = Image.MAX_IMAGE_PIXELS or MAX_PIXELS
    if width * height > limit:
        raise SourceError(f"{path}: {width}x{height} pixels ({width * height:,}), more than the {limit:,} decoded "
                          "at most", hint="a decompression bomb, or an image far larger than a model takes: resize "
                                          "it first")
    if width < 1 or height < 1:
        raise SourceError(f"{path}: {width}x{height} pixels: an empty image")
    if opened.format == "JPEG" and count_scans(path) > MAX_SCANS:
        raise SourceError(f"{path}: a JPEG of more than {MAX_SCANS} scans, the most decoded (a decoder walks the "
                          "whole image once per scan; a progressive photo has about 10)",
                          hint="re-encode it (a crafted file, or a damaged one)")
    shorter = prep.resize or max(prep.height, prep.width)
    factor = shorter / min(width, height)
    size = (max(prep.width, round(width * factor)), max(prep.height, round(height * factor)))
    if size[0] * size[1] > max(limit, prep.width * prep.height):
        raise SourceError(f"{path}: {width}x{height} pixels, its shorter side resized to {shorter} makes it "
                          f"{size[0]}x{size[1]} ({size[0] * size[1]:,} pixels) before the crop, more than the "
                          f"{limit:,} an image is resized to at most",
                          hint="crop the image to the model's aspect ratio first")
    return size


def normalise(crops: np.ndarray, prep: ImagePreprocessing) -> np.ndarray:
    """Samples from a stack of `crop_image` crops (n x height x width x channels, uint8): ``(pixel * scale - mean)
    / std`` in float32 when any arithmetic is asked for, in `prep.layout`. Element by element the same operations
    as on one image at a time, so the values are the same whether a batch or a sample is normalised."""
    pixels = crops.astype(prep.sample_dtype)  # a copy: uint8 -> float32 is exact
    if prep.scale != 1.0:
        pixels *= np.float32(prep.scale)
    if any(m != 0.0 for m in prep.mean):
        pixels -= np.asarray(prep.mean, dtype=np.float32)
    if any(s != 1.0 for s in prep.std):
        pixels /= np.asarray(prep.std, dtype=np.float32)
    if prep.layout == "NCHW":
        pixels = pixels.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(pixels)


def _start_method() -> str:
    """fork where it is safe (one thread, no threaded framework loaded): it starts workers in milliseconds where
    spawn takes most of a second re-importing. Otherwise spawn: a fork of TensorFlow's or ONNX Runtime's threads
    can deadlock the child."""
    import multiprocessing
    import sys
    import threading

    threaded = any(name in sys.modules for name in ("tensorflow", "onnxruntime", "torch"))
    if threading.active_count() == 1 and not threaded and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def _decode_task(paths: list[str], prep: ImagePreprocessing) -> tuple[np.ndarray | None, str | None]:
    """Runs in a worker: the stacked uint8 crops, or the error message (exceptions with hints do not pickle well)."""
    try:
        return np.stack([crop_image(p, prep) for p in paths]), None
    except SourceError as exc:
        return None, exc.message


class ImageFolderSource:
    """Decoded images, in natural path order, streamed with a bounded number of images in flight."""

    def __init__(self, folder: Path, prep: ImagePreprocessing, *, workers: int = 1) -> None:
        self.folder = folder
        self.prep = prep
        self.workers = max(1, workers)
        self.names = list_image_names(folder)
        if not self.names:
            raise SourceError(f"{folder}: no images here (looked for {', '.join(IMAGE_SUFFIXES)})")
        self._position = 0
        self._stream: Iterator[np.ndarray] | None = None
        self._pool: Any = None

    @property
    def files(self) -> list[Path]:
        return [self.folder / name for name in self.names]

    @property
    def samples(self) -> int | None:
        return len(self.names)

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self.prep.sample_shape

    @property
    def description(self) -> str:
        return str(self.folder)

    @property
    def preprocessing(self) -> dict[str, Any]:
        return {**self.prep.to_json(), "order": NATURAL_ORDER,
                "files": self.names}  # not copied: a NameColumn, read-only

    def _serial(self) -> Iterator[np.ndarray]:
        # paths as text: a Path interns each of its parts, and the interpreter's table of interned names only grows
        # (3.7 MB over 50,000 images)
        folder = str(self.folder)
        for name in self.names:
            yield crop_image(os.path.join(folder, name), self.prep)

    def _parallel(self) -> Iterator[np.ndarray]:
        import multiprocessing
        from concurrent.futures import Future, ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        # A process pool from concurrent.futures, not multiprocessing.Pool: a worker that dies is an error
        # (BrokenProcessPool) there, where Pool would replace it and wait forever for its result.
        # Decoding allocates and frees an image's worth of pixels per file (a 640x480 JPEG: about 1.5 MiB over the
        # decode, the resize and the crop): kept for reuse as this process keeps it (binio.heap), the system time of
        # decoding dropped by two thirds (0.45 s -> 0.15 s over 600 such images). A forked worker inherits that; a
        # spawned one is told.
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(_start_method()),
                                         initializer=as_this_process())
        folder = str(self.folder)
        tasks = range(0, len(self.names), _TASK_FILES)  # each task's first image: its paths made as it is sent

        def task(start: int) -> list[str]:
            return [os.path.join(folder, name) for name in self.names[start:start + _TASK_FILES]]

        pending: collections.deque[Future[tuple[np.ndarray | None, str | None]]] = collections.deque()
        submitted = 0
        while submitted < len(tasks) or pending:
            while submitted < len(tasks) and len(pending) < self.workers * _TASKS_AHEAD:
                pending.append(self._pool.submit(_decode_task, task(tasks[submitted]), self.prep))
                submitted += 1
            try:
                stacked, error = pending.popleft().result()
            except BrokenProcessPool as exc:
                raise SourceError(f"{self.folder}: an image decoding worker process died ({exc})",
                                  hint="re-run with --workers 1 to decode in this process") from None
            if error is not None:
                raise SourceError(error)
            assert stacked is not None
            yield from stacked

    def read(self, start: int, stop: int) -> np.ndarray:
        if start != self._position:
            raise ValueError(f"image rows are read in order: asked for {start}, next is {self._position}")
        if self._stream is None:
            self._stream = self._parallel() if self.workers > 1 and len(self.names) > _TASK_FILES else self._serial()
        crops = np.empty((stop - start, self.prep.height, self.prep.width, self.prep.channels), dtype=np.uint8)
        for offset in range(stop - start):
            crops[offset] = next(self._stream)
        self._position = stop
        if self.prep.keeps_pixels and self.prep.layout != "NCHW":
            return crops
        return normalise(crops, self.prep)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
