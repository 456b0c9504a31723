"""`infer convert`: the frozen pb of a contract -> an Ascend .om through ATC, or the ONNX Runtime stand-in.

Reads the contract, converts, and writes the converted model's description back into the contract.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from atc_wrap.precision import DEFAULT_PRECISION_MODE, parse_input_fp16_nodes, parse_output_type
from binio.binfile import sha256_file
from binio.errors import InferError
from infer.contract import ConvertedInfo, ModelContract

TARGETS: tuple[str, ...] = ("om", "onnx")


@dataclass(frozen=True)
class ConvertOptions:
    """The user's choices; empty values leave ATC's defaults."""

    target: str | None = None  # None: om where ATC is found, else onnx
    output: Path | None = None  # the artefact; default beside the contract, named after the pb
    soc_version: str = ""
    precision_mode: str = DEFAULT_PRECISION_MODE
    input_fp16_nodes: str = ""  # ATC syntax: "a;b"
    output_type: str = ""  # ATC syntax: FP32 | FP16 | "node:0:FP16;node2:1:FP32"
    input_format: str = ""  # NHWC | NCHW | ND; default from the contract's inputs
    dynamic_batch: tuple[int, ...] = ()
    op_select_implmode: str = ""
    fusion_switch_file: Path | None = None
    keep_dtype: Path | None = None
    atc_args: tuple[str, ...] = ()
    opset: int | None = None
    allow_unknown_soc: bool = False
    dry_run: bool = False
    timeout: float = 3600.0


@dataclass(frozen=True)
class ConvertResult:
    """The contract as saved after conversion (unchanged for a dry run) and how the target was chosen."""

    contract: ModelContract
    target: str
    artefact: Path
    target_reason: str
    command: tuple[str, ...] = ()  # the ATC argv; () for the stand-in
    dry_run: bool = False


def convert_model(contract: ModelContract, options: ConvertOptions) -> ConvertResult:
    """Converts the contract's pb per `options` and saves the contract with its `converted` section."""
    contract.check_pb_unchanged()
    target, reason = _choose_target(options.target)
    if target == "onnx":
        return _convert_onnx(contract, options, reason)
    raise InferError("--target om is not implemented yet")


def _choose_target(asked: str | None) -> tuple[str, str]:
    if asked is not None:
        if asked not in TARGETS:
            raise InferError(f"--target {asked!r}: expected one of {', '.join(TARGETS)}")
        return asked, f"target {asked} (asked for)"
    return "onnx", "ATC not found: converting to the ONNX Runtime stand-in (--target onnx)"


def _artefact(contract: ModelContract, options: ConvertOptions, suffix: str) -> Path:
    if options.output is None:
        return contract.folder / f"{Path(contract.pb).stem}{suffix}"
    output = Path(options.output)
    return output if output.suffix == suffix else output.with_name(output.name + suffix)


def _relative(path: Path, folder: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(folder).resolve())


def _convert_onnx(contract: ModelContract, options: ConvertOptions, reason: str) -> ConvertResult:
    from atc_wrap.standin import convert_to_onnx

    destination = _artefact(contract, options, ".onnx")
    fp16_nodes = parse_input_fp16_nodes(options.input_fp16_nodes, contract.inputs)
    output_types = parse_output_type(options.output_type, contract.outputs)
    if options.dry_run:
        return ConvertResult(contract=contract, target="onnx", artefact=destination, target_reason=reason,
                             dry_run=True)
    conversion = convert_to_onnx(
        contract.pb_path, contract.inputs, contract.outputs, destination, opset=options.opset,
        precision_mode=options.precision_mode, input_fp16_nodes=fp16_nodes, output_types=output_types,
    )
    converted = ConvertedInfo(
        target="onnx", path=_relative(destination, contract.folder), sha256=sha256_file(destination),
        inputs=conversion.inputs, outputs=conversion.outputs, soc_version="",
        precision_mode=conversion.precision_mode, command=(), settings=conversion.settings(),
    )
    saved = contract.with_converted(converted).save()
    return ConvertResult(contract=saved, target="onnx", artefact=destination, target_reason=reason)
