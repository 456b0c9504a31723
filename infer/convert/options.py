"""What `infer convert` is asked (`ConvertOptions`): the one declaration of its flags, of its pipeline.toml keys
([convert]) and of their defaults and help. Standard library only (no numpy): `infer convert --help` builds its
flags from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atc_wrap.atc.soc import ASSUMED_SOC_VERSION
from atc_wrap.errors import ConvertError
from atc_wrap.precision.modes import (
    DEFAULT_PRECISION_MODE,
    ImplMode,
    PrecisionMode,
    check_implmode,
    check_precision_mode,
)
from atc_wrap.precision.op_controls import check_mixlist_mode
from atc_wrap.target import TARGETS as TARGETS  # infer.convert's export
from atc_wrap.target import Target, check_target
from binio.defaults import DEFAULT_TOOL_TIMEOUT_S
from binio.errors import InferError
from binio.gears import BATCH, DIMS, IMAGE_SIZE, Gear, check_gear_list, parse_gear_list
from binio.layouts import LAYOUTS, Layout
from binio.limits import check_seconds
from infer._option_fields import allow_host_ops_setting, setting, type_name
from infer.model_aipp.options import AippOptions
from infer.remote.options import RemoteOptions, remote_given


def _soc_version(text: str, flag: str) -> str:
    """A chip name as given on the command line; an empty one is refused, not taken as none given."""
    if not text.strip():
        raise InferError(f"{flag} {text!r}: empty; expected a chip name such as Ascend310P3 (npu-smi info names it)",
                         hint=f"leave {flag} out for the stand-in's assumed chip, {ASSUMED_SOC_VERSION}")
    return text.strip()


def _batch_sizes(text: str, flag: str) -> tuple[int, ...]:
    """``1,4,8`` -> (1, 4, 8): whole numbers of 1 or more, no empty item."""
    return tuple(gear[0] for gear in parse_gear_list(text, option=flag, width=1))


def _batch_table(value: Any, where: str) -> tuple[int, ...]:
    """``[1, 4, 8]`` (or ATC's text ``"1,4,8"``), checked as a gear list now: a pipeline refuses it before any stage
    runs; empty for none."""
    if value in ("", []):
        return ()
    if isinstance(value, str):
        sizes = _batch_sizes(value, where)
    elif isinstance(value, list) and all(type(v) is int for v in value):
        sizes = tuple(value)
    else:
        raise InferError(f"{where}: expected a list of whole numbers, e.g. [1, 4, 8], got {type_name(value)} "
                         f"{value!r}")
    check_gear_list(BATCH, tuple((b,) for b in sizes), where)
    return sizes


def _image_sizes(text: str, flag: str) -> tuple[Gear, ...]:
    """``224,224;448,448`` -> ((224, 224), (448, 448)): H,W per gear."""
    return parse_gear_list(text, option=flag, width=2)


def _dims_gears(text: str, flag: str) -> tuple[Gear, ...]:
    """``20,20,1,1;40,40,2,2`` -> one value per unknown dim, per gear."""
    return parse_gear_list(text, option=flag)


def _gear_table(kind: str, width: int | None) -> Any:
    def decode(value: Any, where: str) -> tuple[Gear, ...]:
        """A list of lists of numbers (``[[224, 224], [448, 448]]``), or ATC's text (``"224,224;448,448"``), checked
        as a gear list now (before any stage runs); empty for none."""
        if value in ("", []):
            return ()
        gears = _gear_value(value, where, width)
        check_gear_list(kind, gears, where)
        return gears
    return decode


def _gear_value(value: Any, where: str, width: int | None) -> tuple[Gear, ...]:
    if isinstance(value, str):
        return parse_gear_list(value, option=where, width=width)
    if not isinstance(value, list) or not all(isinstance(g, list) for g in value):
        raise InferError(f"{where}: expected a list of lists of numbers, e.g. [[224, 224], [448, 448]], got "
                         f"{type_name(value)} {value!r}")
    text = ";".join(",".join(str(v) for v in gear) for gear in value)
    if not all(type(v) is int for gear in value for v in gear):
        raise InferError(f"{where}: expected whole numbers in each gear, got {value!r}")
    return parse_gear_list(text, option=where, width=width)


@dataclass(frozen=True)
class ConvertOptions:
    """The user's choices; empty values leave ATC's defaults. In pipeline.toml: [convert], paths relative to it."""

    target: Target | None = setting(None, unset="auto", shown="om where atc is found, else onnx",
                                    help="What to convert to: ATC's om, or the ONNX Runtime stand-in's onnx.")
    use_om: Path | None = setting(None, unset="", help="Record this om, built elsewhere (ATC on another machine), "
                                                      "instead of converting: its inputs and outputs are checked "
                                                      "against the frozen pb's, its own dtypes recorded, and it is "
                                                      "copied into the model folder when outside it.")
    output: Path | None = setting(None, short="-o", toml=False, shown="beside model.json, named after the pb",
                                  help="The converted model's path (.om / .onnx appended when missing).")
    soc_version: str = setting("", parse=_soc_version,
                               shown=f"required for om; the stand-in assumes {ASSUMED_SOC_VERSION}",
                               help="The chip ATC compiles for, e.g. Ascend310P3 (npu-smi info names it); its "
                                    "operator table gives each op's dtype in the precision plan the stand-in "
                                    "emulates, and the pre-check's verdicts.")
    precision_mode: PrecisionMode = setting(DEFAULT_PRECISION_MODE,
                                            always=True,  # the report's command says which mode ran
                                            help=f"ATC's precision mode ({DEFAULT_PRECISION_MODE} is ATC's default); "
                                                 "the stand-in emulates them.")
    input_fp16_nodes: str = setting("", help='Inputs the model takes as float16: "a;b".')
    output_type: str = setting("", help='FP32, FP16 (every float output) or "node:0:FP16;node2:1:FP32".')
    input_format: Layout | None = setting(None, unset="", shown="the contract's",
                                          help="ATC's --input_format (any case).")
    dynamic_batch: tuple[int, ...] = setting((), parse=_batch_sizes, decode=_batch_table,
                                             help="Batch sizes the om accepts, e.g. 1,2,4,8 (2 to 100, "
                                                  "ascending); needs inputs whose batch dim alone is unknown "
                                                  "(freeze --batch -1).")
    dynamic_image_size: tuple[Gear, ...] = setting(
        (), parse=_image_sizes, decode=_gear_table(IMAGE_SIZE, 2),
        help='Image sizes the om accepts, "H,W;H,W" (2 to 100): e.g. "224,224;448,448"; needs inputs whose H and W '
             "alone are unknown (freeze --inputs 'images:0[1,-1,-1,3]').")
    dynamic_dims: tuple[Gear, ...] = setting(
        (), parse=_dims_gears, decode=_gear_table(DIMS, None),
        help='Dims gears, "a,b;c,d" (2 to 100): each gear one value per unknown (-1) dim of all inputs, in order.')
    shape_range: str = setting("", help='A shape range instead of gears (newer CANN, not Ascend310): '
                                        '"images:1~8,224,224,3;mask:-1,16", each unknown dim lo~hi or -1 (any).')
    op_select_implmode: ImplMode | None = setting(None, unset="", help="ATC's --op_select_implmode (om only).")
    fusion_switch_file: Path | None = setting(None, unset="", help="ATC fusion switch file (om only).")
    keep_dtype: Path | None = setting(None, unset="", help="ATC keep_dtype file (from infer tune-precision): op "
                                                           "names (TF node names) or OpType::Type, one a line, kept "
                                                           "in fp32; emulated by the stand-in.")
    modify_mixlist: Path | None = setting(None, unset="", help="ATC modify_mixlist JSON (black-, white-, gray-list "
                                                               "to-add/to-remove op types); allow_mix_precision "
                                                               "only.")
    customize_dtypes: Path | None = setting(None, unset="", help="ATC customize_dtypes file "
                                                                 "(Opname::InputDtype:...,OutputDtype:... lines), "
                                                                 "applied over keep_dtype.")
    atc_args: tuple[str, ...] = setting((), flag="--atc-arg", repeat=True,
                                        help="One more ATC argument, as --atc-arg=--log=info; repeatable.")
    opset: int | None = setting(None, unset=0, shown="the highest tf2onnx and onnxruntime both handle",
                                help="ONNX opset (onnx only).")
    allow_unknown_soc: bool = setting(False, help="Take a --soc-version that is not in the known list (a chip newer "
                                                  "than this tool), which both targets refuse otherwise: ATC gets "
                                                  "it as given; the stand-in, with no operator table for it, plans "
                                                  f"for {ASSUMED_SOC_VERSION} and says so.")
    allow_unsupported: bool = setting(False, help="Go on where the chip's operator table says ATC cannot convert an "
                                                  "op (refused for om, a warning for the stand-in) or cannot build "
                                                  "it in the dtype the mode or a per-op control asks; the table is "
                                                  "a 2022 snapshot, a newer CANN may have the kernel.")
    allow_host_ops: bool = allow_host_ops_setting()
    dry_run: bool = setting(False, toml=False, help="Print the exact ATC command (or what the stand-in would "
                                                    "write) and change nothing.")
    timeout: float = setting(DEFAULT_TOOL_TIMEOUT_S, help="Seconds before a hung ATC is stopped.")
    aipp: AippOptions | None = setting(
        None, inline=True, needs=("these set the preprocessing AIPP does on the NPU",
                                  "add --aipp (or preprocess host-side with infer dump-bin's options)"),
        help="Preprocess on the NPU: aipp.cfg is written beside the model from the color, scale, mean and std "
             "([data.preprocessing] in pipeline.toml) and passed to ATC (--insert_op_conf); the model then takes "
             "uint8 images.")
    # ATC on an Ascend host over SSH: --host and its flags; a pipeline's [remote] table (docs/remote.md)
    remote: RemoteOptions | None = setting(None, toml=False, switch=False, help="in [remote]",
                                           needs=("these say how to reach the Ascend host",
                                                  "add --host [USER@]HOST[:PORT]"))

    def __post_init__(self) -> None:
        """Refuses, naming the option, what is wrong whatever the model: the timeout, the mode, the target, the
        implmode, the input format, and --modify-mixlist outside the one mode it serves."""
        check_seconds(self.timeout, "--timeout")
        check_precision_mode(self.precision_mode)
        if self.target is not None:
            check_target(self.target)
        if self.op_select_implmode is not None:
            check_implmode(self.op_select_implmode)
        if self.input_format is not None:  # ATC's words, taken in any case
            upper = str(self.input_format).upper()
            if upper not in LAYOUTS:
                raise ConvertError(f"--input-format {self.input_format!r}: expected one of {', '.join(LAYOUTS)}")
            object.__setattr__(self, "input_format", upper)
        check_mixlist_mode(self.modify_mixlist, self.precision_mode)
        if self.target == "onnx" and remote_given(self.remote):
            raise ConvertError("--host with --target onnx: the stand-in converts here, ATC on the host",
                               hint="leave out --host, or --target om")
