"""The image preprocessing options `dump-bin` and `convert --aipp` share, parsed once into `ImageOptions`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.errors import InferError

if TYPE_CHECKING:  # imported where it is built: infer.dump_bin._sources pulls numpy, which no --help should pay for
    from infer.preprocessing import ImageOptions


def floats(text: str | None, option: str, default: tuple[float, ...]) -> tuple[float, ...]:
    if text is None:
        return default
    try:
        return tuple(float(v) for v in text.replace(" ", "").split(","))
    except ValueError:
        raise InferError(f"{option} {text}: expected numbers separated by commas (e.g. 123.7,116.3,103.5)") from None


def int_pair(text: str | None, option: str, example: str) -> tuple[int, int] | None:
    """``W,H`` or ``X,Y`` as two non-negative integers; None when not given."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise InferError(f"{option} {text}: expected two whole numbers, e.g. {example}")
    return int(parts[0]), int(parts[1])


def image_options(*, resize: int | None, color: str, scale: float, mean: str | None,
                  std: str | None) -> ImageOptions:
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.preprocessing import ImageOptions

    if color.upper() not in ("RGB", "BGR"):
        raise InferError(f"--color {color}: expected RGB or BGR")
    return ImageOptions(resize=resize, color=color.upper(), scale=scale, mean=floats(mean, "--mean", (0.0,)),
                        std=floats(std, "--std", (1.0,)))
