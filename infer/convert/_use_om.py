"""`infer convert --use-om FILE.om`: an om built elsewhere (ATC on an Ascend server, a model zoo) recorded in model.json
as if infer had converted it, after its inputs and outputs are checked against the frozen pb's.

The om's own descriptors decide what is recorded: its input and output dtypes (float16 where ATC was given
--input_fp16_nodes or --output_type), its shapes, its gears and its AIPP; its chip, ATC version and command line
where the om stores them. model.json names files inside its own folder only (a model folder is moved or copied
as a whole, and a model.json received from someone names nothing elsewhere), so an om outside the folder is
copied in, atomically and checked to be the bytes that were read; one inside is recorded where it is.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path
from typing import Any

from atc_wrap.aipp.from_om import aipp_from_om
from atc_wrap.ascend_files.om_model import OmModel, read_om
from atc_wrap.errors import ConvertError
from atc_wrap.precision.modes import DEFAULT_PRECISION_MODE
from binio.atomic import atomic_file
from binio.binfile import sha256_file
from infer.contract import ConvertedInfo, ModelContract
from infer.convert.options import ConvertOptions
from infer.convert.result import ConvertResult
from infer.model_om import RECORD_KEY, OmDescriptors, match_om
from infer.model_om.descriptors import dynamic_shape_of

# ATC's --precision_mode_v2 names and the --precision_mode each stands for (ATC's documentation, CANN 8.x).
_V2_MODES = {"fp16": "force_fp16", "origin": "must_keep_origin_dtype", "cube_fp16in_fp32out": "force_fp32",
             "mixed_float16": "allow_mix_precision"}
_COPY_CHUNK = 1 << 22


def _atc_options(options: ConvertOptions) -> tuple[str, ...]:
    """The given options that shape a conversion: an om built elsewhere is already what they would make."""
    given = {
        "--input-fp16-nodes": bool(options.input_fp16_nodes), "--output-type": bool(options.output_type),
        "--input-format": bool(options.input_format), "--dynamic-batch": bool(options.dynamic_batch),
        "--dynamic-image-size": bool(options.dynamic_image_size), "--dynamic-dims": bool(options.dynamic_dims),
        "--shape-range": bool(options.shape_range),
        "--op-select-implmode": bool(options.op_select_implmode),
        "--fusion-switch-file": options.fusion_switch_file is not None,
        "--keep-dtype": options.keep_dtype is not None, "--modify-mixlist": options.modify_mixlist is not None,
        "--customize-dtypes": options.customize_dtypes is not None, "--atc-arg": bool(options.atc_args),
        "--opset": options.opset is not None, "--aipp": options.aipp is not None,
    }
    return tuple(flag for flag, present in given.items() if present)


def _cmdline_option(argv: list[str], name: str) -> str:
    for index, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and index + 1 < len(argv):
            return argv[index + 1]
    return ""


def _argv(cmdline: str) -> list[str]:
    try:
        return shlex.split(cmdline)
    except ValueError:  # an unbalanced quote in what ATC recorded: its words as they stand
        return cmdline.split()


def _precision(om: OmModel, options: ConvertOptions) -> tuple[str, str]:
    """(the precision mode the om was built in, where that comes from)."""
    argv = _argv(om.atc_cmdline)
    named = _cmdline_option(argv, "precision_mode")
    if named:
        return named, "its ATC command line"
    v2 = _cmdline_option(argv, "precision_mode_v2")
    if v2:
        return _V2_MODES.get(v2, v2), f"its ATC command line (--precision_mode_v2={v2})"
    if om.atc_cmdline:
        return DEFAULT_PRECISION_MODE, "ATC's default: the command line the om records names none"
    if options.precision_mode != DEFAULT_PRECISION_MODE:
        return options.precision_mode, "--precision-mode (the om records no ATC command line)"
    return DEFAULT_PRECISION_MODE, ("ATC's default, assumed: the om records no ATC command line "
                                    "(--precision-mode says otherwise)")


def _fp16_options(descriptors: OmDescriptors) -> tuple[str, str]:
    """ATC's --input_fp16_nodes and --output_type as the om's dtypes show them: what the stand-in's emulation and
    tune-precision replay."""
    nodes = ";".join(item.spec.node for item in descriptors.inputs if item.spec.dtype == "float16" and not item.aipp)
    fp16 = [item.spec for item in descriptors.outputs if item.spec.dtype == "float16"]
    floats = [item.spec for item in descriptors.outputs if item.spec.dt.is_float]
    if fp16 and len(fp16) == len(floats):
        return nodes, "FP16"
    return nodes, ";".join(f"{spec.node}:{spec.name.rpartition(':')[2]}:FP16" for spec in fp16)


def _destination(contract: ModelContract, options: ConvertOptions, source: Path) -> Path:
    folder = contract.folder.resolve()
    if options.output is None:
        inside = source.resolve().is_relative_to(folder)
        return source.absolute() if inside else folder / source.name
    output = Path(options.output).absolute()
    if output.is_dir():
        output = output / source.name
    elif output.suffix != ".om":
        output = output.with_name(output.name + ".om")
    if not output.resolve().is_relative_to(folder):
        raise ConvertError(f"-o {options.output}: outside the model folder {contract.folder}",
                           hint=f"record the om inside it (e.g. -o {contract.folder / source.name})")
    return output


def _copy(source: Path, destination: Path, expected_sha256: str) -> None:
    """The om copied to `destination` under a temporary name and renamed into place; refused (nothing left) when
    the bytes copied are not the ones that were read and checked."""
    digest = hashlib.sha256()
    with source.open("rb") as reader, atomic_file(destination, source.stat().st_size) as writer:
        while chunk := reader.read(_COPY_CHUNK):
            digest.update(chunk)
            writer.write(chunk)
        if digest.hexdigest() != expected_sha256:
            raise ConvertError(f"{source}: changed while it was read and copied (sha256 differs)",
                               hint="re-run infer convert --use-om once the om is written")


def _aipp_setting(descriptors: OmDescriptors, notes: list[str]) -> dict[str, Any] | None:
    """converted.settings.aipp for an om whose AIPP infer's AIPP path follows; None (and a note) otherwise."""
    for tensor, params in descriptors.aipp:
        config, why_not = aipp_from_om(params)
        if config is None:
            notes.append(f"the om preprocesses {tensor} with an AIPP this toolkit does not follow ({why_not}): "
                         "bins for it are checked by dtype and shape only")
            return None
        return {"file": "", "config": config.to_json(), "source": "the om (its Data op's aipp attribute)",
                "generated_from": None,
                "order": "channel swap -> crop -> colour-space conversion -> normalisation; output stored as fp16",
                "not_expressible": []}
    return None


def use_om(contract: ModelContract, options: ConvertOptions) -> ConvertResult:
    """Records the om `options.use_om` in the contract (saved), after checking it against the frozen pb."""
    assert options.use_om is not None
    source = Path(options.use_om)
    if options.target == "onnx":
        raise ConvertError("--use-om with --target onnx: --use-om records an om; the stand-in is converted from the "
                           "pb", hint="leave out one of them")
    if not source.is_file():
        raise ConvertError(f"--use-om {source}: no such file")
    sha_read = sha256_file(source)
    om = read_om(source)  # one line for what is not an om, truncated, encrypted or not decodable
    descriptors = match_om(om, contract.inputs, contract.outputs)
    if options.soc_version and om.soc_version and options.soc_version != om.soc_version:
        raise ConvertError(f"--use-om {source}: built for {om.soc_version} (its soc_version), not for "
                           f"--soc-version {options.soc_version}", hint="leave out --soc-version, or give the om "
                                                                        f"built for {options.soc_version}")
    notes = list(descriptors.notes)
    precision, precision_from = _precision(om, options)
    notes.append(f"precision mode {precision}: {precision_from}")
    if not om.soc_version:
        notes.append(f"the om names no chip (ATC {om.atc_version or 'of unknown version'} wrote no soc_version)"
                     + (f"; recorded as --soc-version {options.soc_version}" if options.soc_version else ""))
    destination = _destination(contract, options, source)
    copied = destination.resolve() != source.resolve()
    if copied:
        notes.append(f"copied {source} into the model folder as {destination} (model.json names files inside "
                     "its folder only)")
    argv = tuple(_argv(om.atc_cmdline))
    reason = f"--use-om: {source.name}, {descriptors.made_for()}, built by ATC {om.atc_version or '(version unknown)'}"
    ignored = _atc_options(options)
    if options.dry_run:
        return ConvertResult(contract=contract, target="om", artefact=destination, target_reason=reason,
                             command=argv, dry_run=True, ignored=ignored, notes=tuple(notes), used_om=source,
                             copied=copied)
    if copied:
        _copy(source, destination, sha_read)
    fp16_nodes, output_type = _fp16_options(descriptors)
    settings: dict[str, Any] = {
        "converter": "use-om", "source": str(source.absolute()), "copied": copied,
        "input_fp16_nodes": fp16_nodes, "output_type": output_type,
        "precision_mode_from": precision_from, "ignored_options": list(ignored),
        RECORD_KEY: descriptors.to_json(),
    }
    aipp = _aipp_setting(descriptors, notes)
    if aipp is not None:
        settings["aipp"] = aipp
    converted = ConvertedInfo(
        target="om", path=os.path.relpath(destination.resolve(), contract.folder.resolve()), sha256=sha_read,
        inputs=descriptors.input_specs, outputs=descriptors.output_specs,
        soc_version=om.soc_version or options.soc_version, precision_mode=precision, command=argv, settings=settings,
        gears=dynamic_shape_of(descriptors))
    saved = contract.with_converted(converted).save()
    return ConvertResult(contract=saved, target="om", artefact=destination, target_reason=reason, command=argv,
                         ignored=ignored, notes=tuple(notes), used_om=source, copied=copied)

