"""A hand-written AIPP config (ATC's ``--insert_op_conf`` prototxt) read into an `AippConfig`.

The file is protobuf text format; it is parsed by protobuf's own `text_format` against a message definition of the
documented static fields, built here in code. A field outside that definition (padding, resize, rotation, a
misspelling) is refused by name with its line, as is ``aipp_mode: dynamic`` (parameters set by the application at
run time, which nothing before the device can check or emulate).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from atc_wrap.aipp import INPUT_FORMATS, AippConfig
from atc_wrap.errors import ConvertError

_PACKAGE = "infer_aipp"
_BOOLS = ("crop", "rbuv_swap_switch", "ax_swap_switch", "csc_switch")
_UINTS = ("related_input_rank", "src_image_size_w", "src_image_size_h", "load_start_pos_w", "load_start_pos_h",
          "crop_size_w", "crop_size_h")
_MATRIX = tuple(f"matrix_r{r}c{c}" for r in range(3) for c in range(3))
_BIASES = tuple(f"{kind}_bias_{i}" for kind in ("input", "output") for i in range(3))
_MEANS = tuple(f"mean_chn_{i}" for i in range(4))
_FLOATS = tuple(f"{kind}_chn_{i}" for kind in ("min", "var_reci") for i in range(4))
KNOWN_FIELDS: tuple[str, ...] = ("aipp_mode", "input_format", *_UINTS, *_BOOLS, *_MATRIX, *_BIASES, *_MEANS,
                                 *_FLOATS)


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
    for name in _UINTS:
        add(name, fd.TYPE_UINT32)
    for name in _BOOLS:
        add(name, fd.TYPE_BOOL)
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
        return ConvertError(f"{path}{line}: field {field.group(1)!r} is not one infer's AIPP handles",
                            hint="handled: static aipp_op with input_format, src_image_size, crop, swaps, CSC "
                                 "(matrix_r*c*, input_bias_*, output_bias_*) and mean_chn/min_chn/var_reci_chn; "
                                 "padding, resize and rotation are not")
    enum = re.search(r'Enum type "[^"]*InputFormat" has no value named (\S+)', detail)
    if enum:
        return ConvertError(f"{path}{line}: input_format {enum.group(1).rstrip('.')} is not one infer's AIPP "
                            f"handles (expected {', '.join(INPUT_FORMATS)})")
    return ConvertError(f"{path}{line}: not a valid AIPP config ({detail})")


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
        raise ConvertError(f"{path}: no aipp_mode (expected aipp_mode: static)")
    mode = op.DESCRIPTOR.fields_by_name["aipp_mode"].enum_type.values_by_number[op.aipp_mode].name
    if mode != "static":
        raise ConvertError(f"{path}: aipp_mode {mode}: only static AIPP is handled (dynamic AIPP takes its "
                           "parameters from the application at run time, which nothing here can check or emulate)")
    if not op.HasField("input_format"):
        raise ConvertError(f"{path}: no input_format (expected one of {', '.join(INPUT_FORMATS)})")
    fmt = op.DESCRIPTOR.fields_by_name["input_format"].enum_type.values_by_number[op.input_format].name

    def ints(names: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(int(getattr(op, n)) for n in names)

    matrix = ints(_MATRIX)
    values: dict[str, Any] = {name: int(getattr(op, name)) for name in _UINTS}
    values.update({name: bool(getattr(op, name)) for name in _BOOLS})
    return AippConfig(
        input_format=fmt, **values,
        matrix=(matrix[0:3], matrix[3:6], matrix[6:9]),  # type: ignore[arg-type]
        input_bias=ints(_BIASES[:3]), output_bias=ints(_BIASES[3:]),  # type: ignore[arg-type]
        mean_chn=ints(_MEANS),  # type: ignore[arg-type]
        min_chn=tuple(float(getattr(op, f"min_chn_{i}")) for i in range(4)),  # type: ignore[arg-type]
        var_reci_chn=tuple(float(getattr(op, f"var_reci_chn_{i}")) for i in range(4)),  # type: ignore[arg-type]
    )


def read_aipp_config(path: Path) -> AippConfig:
    """The AIPP config file at `path`, parsed and refused where infer cannot handle it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConvertError(f"--aipp-config {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"--aipp-config {path}: cannot read it as text ({exc})") from None
    return parse_aipp_text(text, path)
