"""What a conversion makes: ATC's om, or the ONNX Runtime stand-in's model. Standard library only: the options that
name a target are read by `--help`, which imports no numpy."""

from __future__ import annotations

from typing import Literal, cast

from atc_wrap.errors import ConvertError
from binio.vocabulary import check_word, values_of

Target = Literal["om", "onnx"]
TARGETS: tuple[str, ...] = values_of(Target)


def check_target(target: str) -> Target:
    return cast(Target, check_word(target, TARGETS, "--target", ConvertError))
