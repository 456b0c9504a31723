"""ATC's precision vocabulary: modes, implmodes, and the `--input_fp16_nodes` / `--output_type` syntaxes.

Parsed once here so the ATC command and the ONNX stand-in read the user's options the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

from atc_wrap.errors import ConvertError
from binio.names import node_name
from binio.vocabulary import check_word, values_of

if TYPE_CHECKING:  # the options that check a mode import this module: no numpy for --help
    from binio.spec import TensorSpec

PrecisionMode = Literal[
    "force_fp16", "force_fp32", "allow_fp32_to_fp16", "must_keep_origin_dtype", "allow_mix_precision",
]
PRECISION_MODES: tuple[str, ...] = values_of(PrecisionMode)
DEFAULT_PRECISION_MODE: PrecisionMode = "force_fp16"  # ATC's own default for TensorFlow models
# Modes in which --keep_dtype changes anything: ATC ignores it under must_keep_origin_dtype, and under force_fp32
# every op is fp32 already.
KeepDtypeMode = Literal["force_fp16", "allow_fp32_to_fp16", "allow_mix_precision"]
KEEP_DTYPE_MODES: tuple[str, ...] = values_of(KeepDtypeMode)
ImplMode = Literal["high_precision", "high_performance", "high_precision_for_all", "high_performance_for_all"]
IMPL_MODES: tuple[str, ...] = values_of(ImplMode)
OutputType = Literal["FP32", "FP16", "UINT8"]  # ATC's --output_type words
OUTPUT_TYPES: tuple[str, ...] = values_of(OutputType)


def check_precision_mode(mode: str) -> PrecisionMode:
    return cast(PrecisionMode, check_word(mode, PRECISION_MODES, "--precision-mode", ConvertError))


def check_implmode(mode: str) -> ImplMode:
    return cast(ImplMode, check_word(mode, IMPL_MODES, "--op-select-implmode", ConvertError))


def parse_input_fp16_nodes(text: str, inputs: Sequence[TensorSpec]) -> tuple[str, ...]:
    """``"a;b"`` -> the input node names, each checked to be a float input of the model."""
    names = tuple(part.strip() for part in text.split(";") if part.strip())
    by_node = {spec.node: spec for spec in inputs}
    for name in names:
        spec = by_node.get(node_name(name))
        if spec is None:
            raise ConvertError(f"--input-fp16-nodes {name!r}: not an input of the model; inputs are: "
                               f"{', '.join(by_node)}")
        if not spec.dt.is_float:
            raise ConvertError(f"--input-fp16-nodes {name!r}: input {spec.name} is {spec.dtype}, not a float input")
    return tuple(node_name(name) for name in names)


def parse_output_type(text: str, outputs: Sequence[TensorSpec]) -> dict[str, OutputType]:
    """ATC's ``FP16`` or ``node:0:FP16;node2:1:FP32`` -> output tensor name -> ATC type, for the named outputs.

    A bare type applies to every float output; outputs left out keep FP32 (ATC's default for float outputs).
    """
    body = text.strip()
    if not body:
        return {}
    if ":" not in body:
        kind = _output_type_name(body, body)
        return {spec.name: kind for spec in outputs if spec.dt.is_float}
    by_tensor = {spec.name: spec for spec in outputs}
    chosen: dict[str, OutputType] = {}
    for part in (p.strip() for p in body.split(";") if p.strip()):
        node, sep1, rest = part.partition(":")
        index, sep2, kind_text = rest.partition(":")
        if not (sep1 and sep2 and index.isdigit()):
            raise ConvertError(f"--output-type {part!r}: expected node:index:TYPE, e.g. probs:0:FP16")
        tensor = f"{node}:{int(index)}"
        if tensor not in by_tensor:
            raise ConvertError(f"--output-type {part!r}: {tensor} is not an output of the model; outputs are: "
                               f"{', '.join(by_tensor)}")
        chosen[tensor] = _output_type_name(kind_text, part)
    return chosen


def _output_type_name(kind: str, part: str) -> OutputType:
    value = kind.strip().upper()
    if value not in OUTPUT_TYPES:
        raise ConvertError(f"--output-type {part!r}: type {kind!r} is not one of {', '.join(OUTPUT_TYPES)}")
    return cast(OutputType, value)


def output_type_arg(text: str) -> str:
    """ATC's --output_type as `parse_output_type` read it: its types upper-cased (``FP16``, ``probs:0:FP16``)."""
    body = text.strip()
    if ":" not in body:
        return body.upper()
    parts = [p.strip() for p in body.split(";") if p.strip()]
    return ";".join(f"{p.rsplit(':', 1)[0]}:{p.rsplit(':', 1)[1].strip().upper()}" for p in parts)

