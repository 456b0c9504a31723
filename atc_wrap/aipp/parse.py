"""A hand-written AIPP config (ATC's ``--insert_op_conf`` prototxt) read into an `AippConfig`.

The file is protobuf text format; it is parsed by protobuf's own `text_format` against a message definition of the
documented fields (those of ATC's configuration-file template and GraphEngine's ``insert_op.proto``), built here
in code. It is read as ATC reads it: ``aipp_mode`` must be set (ATC refuses an unset one) and ``static``
(dynamic AIPP takes its parameters from the application at run time, which nothing before the device can check or
emulate); with ``csc_switch`` on, a matrix entry or bias left out takes ATC's default (`csc_defaults`). Each value
is checked against the template's documented range. Fields for what infer does not emulate (padding, resize,
rotation, single-line mode, C padding, edge selection, Caffe's input name) are accepted switched off and refused
by name and line when on; a field outside the definition (a misspelling) is refused by name and line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from atc_wrap.aipp.config import DEFAULT_CSC_BIAS, INPUT_FORMATS, AippConfig, csc_defaults
from atc_wrap.errors import ConvertError
from binio.errors import excerpt
from binio.reading import read_text_file, reading

_PACKAGE = "infer_aipp"
_BOOLS = ("crop", "rbuv_swap_switch", "ax_swap_switch", "csc_switch")
_SIZES = ("src_image_size_w", "src_image_size_h", "load_start_pos_w", "load_start_pos_h", "crop_size_w",
          "crop_size_h")
_MATRIX = tuple(f"matrix_r{r}c{c}" for r in range(3) for c in range(3))
_BIASES = tuple(f"{kind}_bias_{i}" for kind in ("input", "output") for i in range(3))
_MEANS = tuple(f"mean_chn_{i}" for i in range(4))
_FLOATS = tuple(f"{kind}_chn_{i}" for kind in ("min", "var_reci") for i in range(4))
# Documented fields infer does not emulate: (protobuf type, the value that leaves the image alone, what it does).
# Sizes of a switched-off step are ignored, as ATC zeroes them; max_src_image_size and support_rotation are dynamic
# AIPP's and ignored in a static config; raw_rgbir_to_f16_n applies to RAW inputs only.
_UNEMULATED: dict[str, tuple[str, Any, str]] = {
    "resize": ("bool", False, "resizing"), "padding": ("bool", False, "padding"),
    "rotation_angle": ("uint32", 0, "rotation"), "single_line_mode": ("bool", False, "single-line mode"),
    "cpadding_value": ("float", 0.0, "C padding"), "related_input_name": ("string", "", "Caffe's input name"),
    "input_edge_idx": ("uint32", None, "AIPP on some of the input's edges only"),
}
_IGNORED: dict[str, str] = {
    "resize_output_w": "int32", "resize_output_h": "int32", "left_padding_size": "int32",
    "right_padding_size": "int32", "top_padding_size": "int32", "bottom_padding_size": "int32",
    "padding_value": "float", "max_src_image_size": "uint32", "support_rotation": "bool",
    "raw_rgbir_to_f16_n": "uint32",
}
# ATC's template: each field's documented range (src_image_size 0 means the model's size).
_RANGES: dict[str, tuple[float, float]] = {
    "src_image_size_w": (2, 4096), "src_image_size_h": (1, 4096), "load_start_pos_w": (0, 4095),
    "load_start_pos_h": (0, 4095), "crop_size_w": (0, 4096), "crop_size_h": (0, 4096),
    **{name: (-32677, 32676) for name in _MATRIX}, **{name: (0, 255) for name in _BIASES},
    **{name: (0, 255) for name in _MEANS}, **{f"min_chn_{i}": (0, 255) for i in range(4)},
    **{f"var_reci_chn_{i}": (-65504, 65504) for i in range(4)},
}
KNOWN_FIELDS: tuple[str, ...] = ("aipp_mode", "related_input_rank", "input_format", *_SIZES, *_BOOLS, *_MATRIX,
                                 *_BIASES, *_MEANS, *_FLOATS, *_UNEMULATED, *_IGNORED)


@lru_cache(maxsize=1)
def _message_classes() -> tuple[Any, Any]:
    """(AippConfig, AippOpParams) message classes from a descriptor built here (proto2: fields keep presence)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fd = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="infer_aipp.proto", package=_PACKAGE, syntax="proto2")
    mode = proto.enum_type.add(name="AippMode")
    for number, name in enumerate(("undefined", "static", "dynamic")):
        mode.value.add(name=name, number=number)
    formats = proto.enum_type.add(name="InputFormat")
    formats.value.add(name="UNDEFINED", number=0)
    for number, name in enumerate(INPUT_FORMATS, start=1):
        formats.value.add(name=name, number=number)
    params = proto.message_type.add(name="AippOpParams")
    number = 0

    def add(name: str, kind: int, type_name: str = "", default: str = "") -> None:
        nonlocal number
        number += 1
        item = params.field.add(name=name, number=number, label=fd.LABEL_OPTIONAL, type=kind)
        if type_name:
            item.type_name = type_name
        if default:
            item.default_value = default

    add("aipp_mode", fd.TYPE_ENUM, f".{_PACKAGE}.AippMode")
    add("input_format", fd.TYPE_ENUM, f".{_PACKAGE}.InputFormat")
    kinds = {"bool": fd.TYPE_BOOL, "int32": fd.TYPE_INT32, "uint32": fd.TYPE_UINT32, "float": fd.TYPE_DOUBLE,
             "string": fd.TYPE_STRING}
    add("related_input_rank", fd.TYPE_UINT32)
    for name in _SIZES:
        add(name, fd.TYPE_INT32)
    for name in _BOOLS:
        add(name, fd.TYPE_BOOL)
    for name, (kind, _, _) in _UNEMULATED.items():
        add(name, kinds[kind])
    for name, kind in _IGNORED.items():
        add(name, kinds[kind])
    for name in (*_MATRIX, *_BIASES, *_MEANS):
        add(name, fd.TYPE_INT32)
    for name in _FLOATS:
        add(name, fd.TYPE_DOUBLE, default="1.0" if name.startswith("var_reci") else "")
    top = proto.message_type.add(name="AippConfig")
    top.field.add(name="aipp_op", number=1, label=fd.LABEL_REPEATED, type=fd.TYPE_MESSAGE,
                  type_name=f".{_PACKAGE}.AippOpParams")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    config = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.AippConfig"))
    op = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.AippOpParams"))
    return config, op


def _explain(path: Path, message: str) -> ConvertError:
    """protobuf's ParseError as one line naming the file, the line and the field or value."""
    where = re.match(r"(\d+):(\d+) : (.*)", message)
    line, detail = (f":{where.group(1)}", where.group(3)) if where else ("", message)
    field = re.search(r'has no field named "([^"]+)"', detail)
    if field:
        return ConvertError(f"{path}{line}: field {excerpt(field.group(1))} is not a field of ATC's AIPP config",
                            hint="static aipp_op fields: input_format, src_image_size_w/h, crop, load_start_pos_w/h, "
                                 "crop_size_w/h, rbuv_swap_switch, ax_swap_switch, csc_switch, matrix_r*c*, "
                                 "input_bias_*, output_bias_*, mean_chn_*, min_chn_*, var_reci_chn_*")
    enum = re.search(r'Enum type "[^"]*InputFormat" has no value named (\S+)', detail)
    if enum:
        shown = excerpt(enum.group(1).rstrip("."))[1:-1]
        return ConvertError(f"{path}{line}: input_format {shown} is not one infer's AIPP "
                            f"handles (expected {', '.join(INPUT_FORMATS)})")
    whole = re.search(r"'\s*(\w+)\s*:\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)': Couldn't parse integer", detail)
    if whole:
        fraction = " (a fractional mean goes into min_chn)" if whole.group(1).startswith("mean_chn") else ""
        return ConvertError(f"{path}{line}: {whole.group(1)} {whole.group(2)}: ATC takes a whole number "
                            f"there{fraction}")
    return ConvertError(f"{path}{line}: not a valid AIPP config ({excerpt(detail, 120)[1:-1]})")


def parse_aipp_text(text: str, path: Path) -> AippConfig:
    """The one static ``aipp_op`` block of `text` (read from `path`, named in errors)."""
    from google.protobuf import text_format

    config_class, _ = _message_classes()
    message = config_class()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise _explain(path, str(exc)) from None
    if len(message.aipp_op) != 1:
        raise ConvertError(f"{path}: {len(message.aipp_op)} aipp_op blocks; infer handles exactly one (AIPP on one "
                           "model input)")
    op = message.aipp_op[0]
    if not op.HasField("aipp_mode"):
        raise ConvertError(f"{path}: no aipp_mode; ATC refuses a config without one (expected aipp_mode: static)")
    mode = op.DESCRIPTOR.fields_by_name["aipp_mode"].enum_type.values_by_number[op.aipp_mode].name
    if mode != "static":
        raise ConvertError(f"{path}{_line_of(text, 'aipp_mode')}: aipp_mode {mode}: only static AIPP is handled "
                           "(dynamic AIPP takes its parameters from the application at run time, which nothing "
                           "here can check or emulate)")
    if not op.HasField("input_format"):
        raise ConvertError(f"{path}: no input_format (expected one of {', '.join(INPUT_FORMATS)})")
    fmt = op.DESCRIPTOR.fields_by_name["input_format"].enum_type.values_by_number[op.input_format].name
    _refuse_unemulated(op, text, path)
    _check_ranges(op, text, path)

    def given(names: tuple[str, ...], defaults: tuple[int, ...]) -> tuple[int, ...]:
        """The values of `names`; with csc_switch on, ATC's default where one is left out."""
        return tuple(int(getattr(op, n)) if op.HasField(n) or not op.csc_switch else d
                     for n, d in zip(names, defaults, strict=True))

    matrix = given(_MATRIX, tuple(v for row in csc_defaults(fmt) for v in row))
    values: dict[str, Any] = {name: int(getattr(op, name)) for name in ("related_input_rank", *_SIZES)}
    values.update({name: bool(getattr(op, name)) for name in _BOOLS})
    return AippConfig(
        input_format=fmt, **values,
        matrix=(matrix[0:3], matrix[3:6], matrix[6:9]),  # type: ignore[arg-type]
        input_bias=given(_BIASES[:3], DEFAULT_CSC_BIAS),  # type: ignore[arg-type]
        output_bias=given(_BIASES[3:], DEFAULT_CSC_BIAS),  # type: ignore[arg-type]
        mean_chn=tuple(int(getattr(op, n)) for n in _MEANS),  # type: ignore[arg-type]
        min_chn=tuple(float(getattr(op, f"min_chn_{i}")) for i in range(4)),  # type: ignore[arg-type]
        var_reci_chn=tuple(float(getattr(op, f"var_reci_chn_{i}")) for i in range(4)),  # type: ignore[arg-type]
    )


def _line_of(text: str, name: str) -> str:
    """``:N``, the line that sets `name` in `text` (comments aside), or "" if no line does."""
    pattern = re.compile(rf"(^|[\s{{]){re.escape(name)}\s*:")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line.split("#", 1)[0]):
            return f":{number}"
    return ""


def _refuse_unemulated(op: Any, text: str, path: Path) -> None:
    """A documented field for a step infer does not emulate, switched on, refused by name and line."""
    for name, (_, off, what) in _UNEMULATED.items():
        if op.HasField(name) and getattr(op, name) != off:
            value = str(getattr(op, name)).lower() if isinstance(getattr(op, name), bool) else getattr(op, name)
            raise ConvertError(f"{path}{_line_of(text, name)}: {name} {value}: {what} is not emulated by infer, "
                               "so neither the stand-in nor compare could reproduce the device",
                               hint=f"leave {name} out (or at its default) and do that step host-side")


def _check_ranges(op: Any, text: str, path: Path) -> None:
    """Each value set in the file within the range ATC's template documents for it."""
    for name, (low, high) in _RANGES.items():
        if not op.HasField(name):
            continue
        value = getattr(op, name)
        if name.startswith("src_image_size") and value == 0:
            continue  # 0: the model's size
        if not low <= value <= high:
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            raise ConvertError(f"{path}{_line_of(text, name)}: {name} {shown}: outside ATC's documented range "
                               f"[{low:g}, {high:g}]" + (" (or 0)" if name.startswith("src_image_size") else ""))


def read_aipp_config(path: Path) -> AippConfig:
    """The AIPP config file at `path`, parsed and refused where infer cannot handle it."""
    path = Path(path)
    text = read_text_file(path, what="an AIPP config", error=ConvertError, named=f"--aipp-config {path}")
    with reading(path):
        return parse_aipp_text(text, path)
