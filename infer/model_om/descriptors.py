"""An om's own inputs and outputs as model.json's tensor specs: named as the contract names them, with the dtype and
shape the om stores (`OmDescriptors`), matched against the frozen pb's by name (`match_om`).

The om's descriptors are the truth about what it takes and gives: ATC may have made an input float16
(``--input_fp16_nodes``), an output float16 (``--output_type``), fixed a batch or added gears, whatever the command
line model.json predicted. They are read from the om once, when convert records it (``converted.settings.om``),
and from then on taken from model.json, whose sha256 of the om says the file is still the one read. A contract
that records an om without them (an om convert could not read, or one given to a contract by hand) has its om read
where it is used (`om_descriptors`); one this reader cannot open keeps model.json's own specs, with a warning.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from atc_wrap.ascend_files.errors import OmFileError
from atc_wrap.ascend_files.ge_attrs import attr_json
from atc_wrap.ascend_files.om_model import OmIo, OmModel, read_om
from binio.dtypes import DTYPE_NAMES, dtype
from binio.gears import BATCH, DIMS, IMAGE_SIZE, DynamicShape, GearError, check_widths
from binio.spec import Shape, TensorSpec, format_shape
from infer.contract import ModelContract
from infer.model_om.errors import OmMismatchError

log = logging.getLogger(__name__)

RECORD_KEY = "om"  # converted.settings[RECORD_KEY]: what the om's own descriptors say (model.json)
_INTEGER = re.compile(r"^-?\d{1,18}$")


@dataclass(frozen=True)
class OmInput:
    """One om input: model.json's name with the om's dtype and shape."""

    spec: TensorSpec
    index: int  # its place among the om's inputs: msame and ais_bench take the input folders in this order
    format: str  # the layout string the om stores (NHWC, NCHW, ND, ...)
    aipp: bool  # the om preprocesses it with AIPP (its bins are what AIPP takes, uint8 images)


@dataclass(frozen=True)
class OmOutput:
    """One om output: model.json's name with the om's dtype and shape."""

    spec: TensorSpec
    om_name: str  # as ACL names it (the out node ATC was given, or output_<i>_<op>_<index>)
    format: str


@dataclass(frozen=True)
class OmGears:
    """The shapes a dynamic om takes (ATC's --dynamic_batch_size, --dynamic_image_size, --dynamic_dims)."""

    kind: str  # batch, image_size, dims, or what the om says when unknown
    values: tuple[tuple[int, ...], ...]

    def batches(self) -> tuple[int, ...]:
        """The batch sizes of a dynamic-batch om; () for any other kind."""
        return tuple(gear[0] for gear in self.values if gear) if self.kind == "batch" else ()

    def describe(self) -> str:
        shown = ", ".join(",".join(str(v) for v in gear) for gear in self.values) or "none listed"
        return f"dynamic {self.kind.replace('_', ' ')} gears {shown}"


@dataclass(frozen=True)
class OmDescriptors:
    """What an om takes and gives, in model.json's names and order, and where its facts came from."""

    path: Path
    inputs: tuple[OmInput, ...]  # model.json's order
    outputs: tuple[OmOutput, ...]  # model.json's order, which is the om's (checked)
    soc_version: str  # "" where ATC did not record it (older oms)
    atc_version: str
    header_version: int
    atc_cmdline: str
    out_node_names: tuple[str, ...]
    gears: OmGears | None
    aipp: tuple[tuple[str, dict[str, Any]], ...]  # (input tensor, the om's AIPP parameters as JSON)
    notes: tuple[str, ...] = ()  # what matching had to take on trust (outputs matched by position, ...)

    @property
    def input_specs(self) -> tuple[TensorSpec, ...]:
        return tuple(item.spec for item in self.inputs)

    @property
    def output_specs(self) -> tuple[TensorSpec, ...]:
        return tuple(item.spec for item in self.outputs)

    @property
    def fed_order(self) -> tuple[TensorSpec, ...]:
        """The inputs in the om's own order: the order msame's and ais_bench's --input folders must come in."""
        return tuple(item.spec for item in sorted(self.inputs, key=lambda item: item.index))

    @property
    def name(self) -> str:
        return self.path.name

    def made_for(self) -> str:
        """``an om for Ascend310 (its soc_version)``, or what is known without one."""
        if self.soc_version:
            return f"an om for {self.soc_version} (its soc_version)"
        return f"an om that names no chip (ATC {self.atc_version or 'of unknown version'} wrote no soc_version)"

    def to_json(self) -> dict[str, Any]:
        """What model.json keeps under ``converted.settings.om``."""
        return {
            "file": self.path.name, "header_version": f"0x{self.header_version:08X}", "soc_version": self.soc_version,
            "atc_version": self.atc_version, "atc_cmdline": self.atc_cmdline,
            "out_node_names": list(self.out_node_names),
            "inputs": [{"tensor": i.spec.name, "index": i.index, "dtype": i.spec.dtype, "shape": list(i.spec.shape),
                        "format": i.format, "aipp": i.aipp} for i in self.inputs],
            "outputs": [{"tensor": o.spec.name, "om_name": o.om_name, "dtype": o.spec.dtype,
                         "shape": list(o.spec.shape), "format": o.format} for o in self.outputs],
            "gears": None if self.gears is None else {"kind": self.gears.kind,
                                                      "values": [list(g) for g in self.gears.values]},
            "aipp": {tensor: params for tensor, params in self.aipp},
            "notes": list(self.notes),
        }


def _om_shape(shape: Sequence[int]) -> Shape:
    """GE's -1 (a dim a dynamic om decides per gear) as an unknown dim."""
    return tuple(None if d < 0 else d for d in shape)


def _spec_dtype(om: OmModel, what: str, found: str) -> str:
    if found not in DTYPE_NAMES:
        raise OmMismatchError(f"{om.path}: {what} is {found} in the om: no bin is written in that dtype here "
                              f"(expected one of {', '.join(DTYPE_NAMES)})")
    return found


def _kinds_agree(om_dtype: str, pb_dtype: str) -> bool:
    """Whether ATC can have made `om_dtype` of the pb's `pb_dtype`: the same, or another float width."""
    om_dt, pb_dt = dtype(om_dtype), dtype(pb_dtype)
    return om_dtype == pb_dtype or (om_dt.is_float and pb_dt.is_float)


def output_dtype_change(pb_dtype: str, om_dtype: str) -> str:
    """Why an om output read in `om_dtype` where TensorFlow gives `pb_dtype` is harmless, or not, for the comparison
    (both sides are compared as numbers: the om's output files are read in the om's dtype, TensorFlow's in its)."""
    pb_np, om_np = dtype(pb_dtype).np_dtype, dtype(om_dtype).np_dtype
    if np.can_cast(pb_np, om_np, casting="safe"):
        return f"every {pb_dtype} value is exactly a {om_dtype}, harmless for the comparison"
    if om_np.kind == "f" and pb_np.kind in "iub":
        bits = np.finfo(om_np).nmant + 1
        return (f"ATC cast it (a Cast op before the om's output): integers up to 2^{bits} in magnitude are exact in "
                f"{om_dtype}, so class indices and counts compare exactly; larger values are rounded")
    if om_np.kind == "f" and pb_np.kind == "f":
        return (f"rounded to {om_dtype} on the device (--output_type or an fp16 op last): the comparison measures that "
                "rounding too")
    if om_np.kind in "iub" and pb_np.kind == "f":
        return "the om gives whole numbers where the pb gives fractions: not harmless, the fractions show as error"
    return f"harmless while the values fit {om_dtype}'s range; values beyond it wrap on the device"


def _check_shape(om: OmModel, what: str, om_shape: Shape, pb_shape: Shape) -> None:
    if len(om_shape) != len(pb_shape) or any(a is not None and b is not None and a != b
                                             for a, b in zip(om_shape, pb_shape, strict=False)):
        raise OmMismatchError(f"{om.path}: {what}: the om has shape {format_shape(om_shape)}, the frozen pb "
                              f"{format_shape(pb_shape)}", hint="convert this pb again, or freeze the graph the om "
                                                                "was built from")


def _match_inputs(om: OmModel, pb_inputs: tuple[TensorSpec, ...],
                  aipp_inputs: set[str]) -> tuple[tuple[OmInput, ...], list[str]]:
    by_name = {io.name: io for io in om.inputs}
    notes: list[str] = []
    wanted = {spec.node for spec in pb_inputs}
    extra = [io.name for io in om.inputs if io.name not in wanted]
    missing = [spec.node for spec in pb_inputs if spec.node not in by_name]
    if missing or extra:
        raise OmMismatchError(
            f"{om.path}: the om's inputs are {', '.join(io.name for io in om.inputs) or 'none'}, the frozen pb's "
            f"{', '.join(spec.node for spec in pb_inputs)}: "
            + "; ".join(([f"{', '.join(missing)} not in the om"] if missing else [])
                        + ([f"{', '.join(extra)} not in the pb"] if extra else [])),
            hint="give the om built from this pb (ATC's --model), or freeze with --inputs naming the om's inputs")
    found = []
    for spec in pb_inputs:
        io = by_name[spec.node]
        what = f"input {spec.node}"
        om_dtype = _spec_dtype(om, what, io.tensor.dtype)
        with_aipp = io.op_name in aipp_inputs
        shape = _om_shape(io.tensor.shape)
        if with_aipp:  # AIPP takes uint8 images of its own size: the pb's float tensor is what comes out of it
            notes.append(f"input {spec.node}: preprocessed by the om's AIPP, takes {om_dtype} "
                         f"{format_shape(shape)}")
        else:
            if not _kinds_agree(om_dtype, spec.dtype):
                raise OmMismatchError(f"{om.path}: {what}: the om takes {om_dtype}, the frozen pb {spec.dtype}")
            _check_shape(om, what, shape, spec.shape)
            if om_dtype != spec.dtype:
                notes.append(f"input {spec.node}: the om takes {om_dtype} where the pb takes {spec.dtype}")
        found.append(OmInput(spec=TensorSpec(spec.name, om_dtype, shape, spec.layout), index=io.index,
                             format=io.tensor.format, aipp=with_aipp))
    return tuple(found), notes


def _names_given(om: OmModel) -> bool:
    return len(om.out_node_names) == len(om.outputs)


def _output_for(om: OmModel, index: int, io: OmIo, pb_outputs: tuple[TensorSpec, ...]) -> TensorSpec | None:
    if not _names_given(om):
        return pb_outputs[index] if index < len(pb_outputs) else None
    return next((spec for spec in pb_outputs if io.name in (spec.name, spec.node)), None)


def _match_outputs(om: OmModel, pb_outputs: tuple[TensorSpec, ...]) -> tuple[tuple[OmOutput, ...], list[str]]:
    notes: list[str] = []
    om_names = ", ".join(io.name for io in om.outputs) or "none"
    pb_names = ", ".join(spec.name for spec in pb_outputs)
    if len(om.outputs) != len(pb_outputs):
        raise OmMismatchError(f"{om.path}: the om has {len(om.outputs)} output(s) ({om_names}), the frozen pb "
                              f"{len(pb_outputs)} ({pb_names})",
                              hint="freeze with --outputs naming the om's outputs (ATC's --out_nodes)")
    if not _names_given(om):
        notes.append(f"the om does not name its outputs ({om_names}): matched to the pb's by position")
    matched = [_output_for(om, index, io, pb_outputs) for index, io in enumerate(om.outputs)]
    unknown = [io.name for io, spec in zip(om.outputs, matched, strict=True) if spec is None]
    if unknown:
        raise OmMismatchError(f"{om.path}: the om's outputs are {om_names}, the frozen pb's {pb_names}: "
                              f"{', '.join(unknown)} not in the pb",
                              hint="freeze with --outputs naming the om's outputs (ATC's --out_nodes)")
    order = [spec.name for spec in matched if spec is not None]
    if order != [spec.name for spec in pb_outputs]:
        raise OmMismatchError(f"{om.path}: the om gives its outputs in the order {', '.join(order)}, model.json "
                              f"lists {pb_names}: output i of msame would be compared with another tensor",
                              hint=f"freeze again with --outputs {','.join(order)}")
    found = []
    for io, spec in zip(om.outputs, pb_outputs, strict=True):
        what = f"output {spec.name}"
        om_dtype = _spec_dtype(om, what, io.tensor.dtype)
        shape = _om_shape(io.tensor.shape)
        _check_shape(om, what, shape, spec.shape)
        if om_dtype != spec.dtype:  # the om's descriptor decides how its output files are read
            notes.append(f"output {spec.name}: the om gives {om_dtype} where the pb gives {spec.dtype}: "
                         f"{output_dtype_change(spec.dtype, om_dtype)}")
        found.append(OmOutput(spec=TensorSpec(spec.name, om_dtype, shape, spec.layout), om_name=io.name,
                              format=io.tensor.format))
    return tuple(found), notes


def _aipp_by_input(om: OmModel) -> dict[str, dict[str, Any]]:
    """The om's AIPP parameters by the Data op they sit on (as JSON); an AippData op's by its related input."""
    found: dict[str, dict[str, Any]] = {}
    names = {io.op_name for io in om.inputs}
    for config in om.aipp:
        params = {key: attr_json(value) for key, value in config.params}
        if config.op_name in names:
            found[config.op_name] = params
        else:
            rank = params.get("related_input_rank", 0)
            if isinstance(rank, int) and 0 <= rank < len(om.inputs):
                found[om.inputs[rank].op_name] = params
    return found


def _gears(om: OmModel) -> OmGears | None:
    if om.gears is None:
        return None
    values = om.gears.gears
    if not values and om.gears.all_gears_info:  # only the NetOutput's "1,224;2,448" survived
        values = tuple(tuple(int(v) for v in gear.split(",") if _INTEGER.match(v.strip()))
                       for gear in om.gears.all_gears_info.split(";") if gear.strip())
    return OmGears(kind=om.gears.kind, values=values)


def match_om(om: OmModel, pb_inputs: tuple[TensorSpec, ...], pb_outputs: tuple[TensorSpec, ...]) -> OmDescriptors:
    """The om's inputs and outputs as model.json's specs, after checking them against the frozen pb's: the same
    names (an om that does not name its outputs is matched by position), the same shapes where both know a dim,
    input dtypes of the same kind (ATC makes float32 float16, never an integer). AIPP inputs take the om's uint8
    images. An output is read in the om's dtype whatever the pb's (older ATC cast an int32 ArgMax to float32), with
    a note saying whether that changes the comparison (`output_dtype_change`). Refused by name otherwise
    (OmMismatchError)."""
    aipp = _aipp_by_input(om)
    inputs, input_notes = _match_inputs(om, pb_inputs, set(aipp))
    outputs, output_notes = _match_outputs(om, pb_outputs)
    tensor_of = {spec.node: spec.name for spec in pb_inputs}
    return OmDescriptors(
        path=om.path, inputs=inputs, outputs=outputs, soc_version=om.soc_version, atc_version=om.atc_version,
        header_version=om.header.version, atc_cmdline=om.atc_cmdline, out_node_names=om.out_node_names,
        gears=_gears(om), aipp=tuple((tensor_of.get(op, op), params) for op, params in aipp.items()),
        notes=(*input_notes, *output_notes))


def _recorded(contract: ModelContract) -> OmDescriptors | None:
    """The om's descriptors model.json recorded (convert read them), as they were read."""
    converted = contract.converted
    record = converted.settings.get(RECORD_KEY) if converted is not None else None
    if converted is None or not isinstance(record, dict):
        return None
    try:
        by_input = {item["tensor"]: item for item in record["inputs"]}
        by_output = {item["tensor"]: item for item in record["outputs"]}
        inputs = tuple(OmInput(spec=spec, index=int(by_input[spec.name]["index"]),
                               format=str(by_input[spec.name].get("format", "")),
                               aipp=bool(by_input[spec.name].get("aipp", False))) for spec in converted.inputs)
        outputs = tuple(OmOutput(spec=spec, om_name=str(by_output[spec.name].get("om_name", spec.name)),
                                 format=str(by_output[spec.name].get("format", ""))) for spec in converted.outputs)
        gears = record.get("gears")
        version = str(record.get("header_version", "0x0"))
        return OmDescriptors(
            path=contract.folder / converted.path, inputs=inputs, outputs=outputs,
            soc_version=str(record.get("soc_version", "")), atc_version=str(record.get("atc_version", "")),
            header_version=int(version, 16) if version.startswith("0x") else 0,
            atc_cmdline=str(record.get("atc_cmdline", "")),
            out_node_names=tuple(str(n) for n in record.get("out_node_names", [])),
            gears=None if not isinstance(gears, dict) else OmGears(
                kind=str(gears.get("kind", "")), values=tuple(tuple(int(v) for v in g) for g in gears["values"])),
            aipp=tuple((str(k), v) for k, v in (record.get("aipp") or {}).items() if isinstance(v, dict)),
            notes=tuple(str(n) for n in record.get("notes", [])))
    except (KeyError, TypeError, ValueError, AttributeError):
        log.warning("%s: converted.settings.om is not what convert writes; reading the om again", contract.path)
        return None


@functools.lru_cache(maxsize=8)
def _read_matched(path: Path, stamp: tuple[int, int], inputs: tuple[TensorSpec, ...],
                  outputs: tuple[TensorSpec, ...]) -> OmDescriptors | None:
    """The om read and matched (cached per file state: compare and the runs it starts read it once)."""
    try:
        return match_om(read_om(path), inputs, outputs)
    except (OmFileError, OmMismatchError) as err:
        # The toolkit's own reader may not know every om CANN loads: the om still runs, on model.json's specs.
        log.warning("%s; model.json's specs of it are used", err.message)
        return None


def om_descriptors(contract: ModelContract) -> OmDescriptors | None:
    """The converted om's own descriptors: model.json's record of them, else read from the om now. None for a model
    not converted to an om, and for an om that cannot be read (not an om, encrypted, one this reader does not
    follow: a warning says which): model.json's specs then stand."""
    converted = contract.converted
    if converted is None or converted.target != "om":
        return None
    recorded = _recorded(contract)
    if recorded is not None:
        return recorded
    path = contract.folder / converted.path
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _read_matched(path.resolve(), (stat.st_mtime_ns, stat.st_size), contract.inputs, contract.outputs)


def with_om_descriptors(contract: ModelContract) -> ModelContract:
    """The contract with the converted om's inputs and outputs as the om itself has them (in memory: model.json is
    not rewritten); unchanged where there is no om or it cannot be read."""
    found = om_descriptors(contract)
    converted = contract.converted
    if found is None or converted is None:
        return contract
    if (found.input_specs, found.output_specs) == (converted.inputs, converted.outputs):
        return contract
    for old, new in zip((*converted.inputs, *converted.outputs), (*found.input_specs, *found.output_specs),
                        strict=False):
        if old != new:
            log.warning("%s: %s is %s in the om itself, %s in model.json: the om's is used", found.path, new.name,
                        new.describe(), old.describe())
    return replace(contract, converted=replace(converted, inputs=found.input_specs, outputs=found.output_specs))


def dynamic_shape_of(om: OmDescriptors) -> DynamicShape | None:
    """The om's gears as model.json records them (`binio.gears`), from its own descriptors: its inputs with the
    dims a gear decides unknown. None for a static om, or gears this reader cannot place (an unknown kind, values
    that do not fit the unknown dims: what ATC stores per gear is read, not documented)."""
    if om.gears is None or om.gears.kind not in (BATCH, IMAGE_SIZE, DIMS) or not om.gears.values:
        return None
    shape = DynamicShape(om.gears.kind, tuple((s.name, tuple(s.shape)) for s in om.input_specs),
                         gears=om.gears.values)
    try:
        check_widths(shape)
    except GearError:
        log.info("%s: gears %s do not fit its unknown dims; none recorded", om.path, om.gears.describe())
        return None
    return shape
