"""The demo's labelled images: a coloured shape on a noisy dark background; the label is the shape's colour.

The rule is synthetic and known, so the labels are ground truth (not the model's own answers): the demo model is
trained on fresh samples from the same generator, and accuracy against these labels means something.
Deterministic: the same seed writes byte-identical PNG files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from binio.atomic import atomic_path, write_bytes_atomic

CLASSES: tuple[str, ...] = ("red", "green", "blue", "yellow")
_COLOURS = np.array([[220, 40, 40], [40, 200, 60], [50, 70, 230], [230, 210, 40]], dtype=np.float64)
IMAGE_SIZE = 32
LABELS_FILE = "labels.txt"  # one class index per line, in the sorted order of the image file names
CLASSES_FILE = "classes.txt"


@dataclass(frozen=True)
class DemoDataset:
    folder: Path
    image_folder: Path  # images only: what dump-bin reads
    images: tuple[Path, ...]  # sorted by name, the order dump-bin reads them in
    labels: tuple[int, ...]
    labels_path: Path
    classes: tuple[str, ...]


def make_samples(count: int, seed: int, size: int = IMAGE_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """`count` uint8 images (count, size, size, 3) and their int64 labels, from `seed` alone."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASSES), size=count)
    rows, cols = np.mgrid[0:size, 0:size]
    images = np.empty((count, size, size, 3), dtype=np.uint8)
    for index, label in enumerate(labels):
        background = rng.uniform(0, 70, size=(size, size, 3))
        colour = np.clip(_COLOURS[label] + rng.normal(0, 18, size=3), 0, 255)
        centre_r, centre_c = rng.uniform(size * 0.3, size * 0.7, size=2)
        radius = rng.uniform(size * 0.2, size * 0.35)
        if rng.random() < 0.5:  # a disc
            mask = (rows - centre_r) ** 2 + (cols - centre_c) ** 2 <= radius**2
        else:  # a square
            mask = (np.abs(rows - centre_r) <= radius * 0.9) & (np.abs(cols - centre_c) <= radius * 0.9)
        image = background
        image[mask] = colour + rng.normal(0, 10, size=(int(mask.sum()), 3))
        images[index] = np.clip(image, 0, 255).astype(np.uint8)
    return images, labels.astype(np.int64)


def write_dataset(folder: Path, *, count: int = 60, seed: int = 1) -> DemoDataset:
    """``folder/images/0000_red.png``..., ``folder/labels.txt`` and ``folder/classes.txt``, written atomically."""
    from PIL import Image

    folder = Path(folder)
    image_folder = folder / "images"
    image_folder.mkdir(parents=True, exist_ok=True)
    images, labels = make_samples(count, seed)
    paths = []
    for index, (image, label) in enumerate(zip(images, labels, strict=True)):
        path = image_folder / f"{index:04d}_{CLASSES[label]}.png"
        with atomic_path(path) as tmp:
            # PNG written without a timestamp chunk, so the same seed gives the same bytes.
            Image.fromarray(image, mode="RGB").save(tmp, format="PNG", optimize=False)
        paths.append(path)
    labels_path = folder / LABELS_FILE
    write_bytes_atomic(labels_path, "".join(f"{int(label)}\n" for label in labels).encode())
    write_bytes_atomic(folder / CLASSES_FILE, "".join(f"{name}\n" for name in CLASSES).encode())
    return DemoDataset(folder=folder, image_folder=image_folder, images=tuple(paths),
                       labels=tuple(int(v) for v in labels), labels_path=labels_path, classes=CLASSES)
