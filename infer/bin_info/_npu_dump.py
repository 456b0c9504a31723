"""bin-info of an NPU dump file or folder: each file's op, its inputs and outputs (dtype, format, shape, the TF
tensor it holds), and each as a plain array, its NPU layout (NC1HWC0, FRACTAL_NZ, FRACTAL_Z, ...) turned back into
the framework's by the origin format and shape the om records for it (``--om``), else by those the dump records.

A tensor whose origin is known from neither stays in its device layout, and says so; a file that cannot be read is
named with its reason. --to-npy writes each tensor as ``<dump file name>.<input|output>.<index>.npy``, the naming
of msaccucmp's own conversion (mindstudio-probe 26.2.0, dump_parse/dump_data_parser.py), in the layout shown.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from atc_wrap.ascend_files.npu_dump import DumpTensor, NpuDump, dump_file_name_of, read_npu_dump, walk_dump_folder
from atc_wrap.ascend_files.npu_layouts import CONVERTED_FORMATS
from atc_wrap.ascend_files.om_model import OmModel, OmOp, OmTensor, read_om
from binio.atomic import atomic_path
from binio.errors import InferError, OutputExistsError
from binio.info import tensor_stats
from binio.manifest import MANIFEST_NAME
from binio.output import check_output
from binio.spec import format_shape
from infer.bin_info.options import BinInfoOptions
from infer.bin_info.result import BinInfoReport, DumpOpInfo, DumpTensorInfo, InfoRow


def is_npu_dump(path: Path) -> bool:
    """A file named as a device names its dumps, or a folder (not a dataset) holding such files."""
    if path.is_file():
        return dump_file_name_of(path) is not None
    if path.is_dir() and not (path / MANIFEST_NAME).is_file():
        return bool(walk_dump_folder(path).entries)
    return False


def _safe(name: str) -> str:
    return name.replace("/", "_").replace(".", "_")


class _OmOps:
    """The om's ops by name, and by the name as dump files spell it."""

    def __init__(self, om: OmModel | None) -> None:
        ops = om.ops if om is not None else ()
        self.given = om is not None
        self.by_name = {op.name: op for op in ops}
        self.by_safe = {_safe(op.name): op for op in ops}

    def find(self, dump: NpuDump) -> OmOp | None:
        return self.by_name.get(dump.op_name) or self.by_safe.get(dump.file_name.op_name if dump.file_name else "")


def _origin(tensor: DumpTensor, desc: OmTensor | None) -> tuple[str, tuple[int, ...] | None, str]:
    if desc is not None:
        fmt = desc.origin_format or desc.origin_dump_format
        if fmt and desc.origin_shape is not None:
            return fmt, desc.origin_shape, "om"
    if tensor.original_format and tensor.original_shape is not None:
        return tensor.original_format, tensor.original_shape, "dump"
    return "", None, ""


def _plain(tensor: DumpTensor, desc: OmTensor | None, om_given: bool) -> tuple[DumpTensorInfo, np.ndarray | None]:
    """The tensor described, and as a plain array (in its origin layout where that is known)."""
    name = f"{tensor.original_name}:{tensor.original_output_index or 0}" if tensor.original_name else ""
    if not name and desc is not None and desc.origin_name:
        name = f"{desc.origin_name}:{desc.origin_output_index or 0}"
    fmt, shape, whose = _origin(tensor, desc)
    info = DumpTensorInfo(role=tensor.role, index=tensor.index, dtype=tensor.dtype, format=tensor.format,
                          shape=tensor.shape, original_name=name, origin_format="", origin_shape=None, origin_from="",
                          stats=None)
    try:
        device = tensor.array()
    except InferError as exc:
        return replace(info, note=exc.message), None
    if tensor.padding:  # an AIPP Data input, sized as GE's input_origin_size (the image's aligned bytes)
        info = replace(info, note=f"{tensor.padding} byte(s) past its shape: the first {tensor.size - tensor.padding} "
                                  "are the tensor, as msaccucmp reads them")
    if not fmt or shape is None:
        note = (f"left as {tensor.format}: neither the om nor the dump gives its origin format and shape"
                + ("" if om_given else " (pass --om MODEL.om)")) if tensor.format in CONVERTED_FORMATS else info.note
        return replace(info, stats=tensor_stats(device), note=note), device
    try:
        array = tensor.origin_array(fmt, shape)
    except InferError as exc:
        return replace(info, stats=tensor_stats(device), note=f"left as {tensor.format}: {exc.message}"), device
    return replace(info, origin_format=fmt, origin_shape=tuple(shape), origin_from=whose,
                 stats=tensor_stats(array)), array


def _label(op: DumpOpInfo, info: DumpTensorInfo, root: Path | None) -> str:
    where = op.path.relative_to(root) if root is not None else op.path.name
    held = f" = {info.original_name}" if info.original_name else ""
    turned = (f" -> {info.origin_format} {format_shape(info.origin_shape)} (the {info.origin_from}'s origin)"
              if info.origin_shape is not None and (info.origin_format != info.format
                                                   or tuple(info.origin_shape) != info.shape) else "")
    return f"{where}: {op.op_type} {op.op_name} {info.role} {info.index}{held}: {info.format} " \
           f"{format_shape(info.shape)}{turned}"


def _describe(path: Path, ops: _OmOps) -> tuple[DumpOpInfo, list[np.ndarray | None]]:
    """One file: its op, and each tensor described and as a plain array (None where it cannot be read)."""
    dump = read_npu_dump(path)
    om_op = ops.find(dump)
    tensors, arrays = [], []
    for tensor in (*dump.inputs, *dump.outputs):
        descs = (om_op.input_descs if tensor.role == "input" else om_op.output_descs) if om_op is not None else ()
        desc = descs[tensor.index] if tensor.index < len(descs) else None
        info, array = _plain(tensor, desc, ops.given)
        tensors.append(info)
        arrays.append(array)
    name = dump.file_name
    return DumpOpInfo(path=path, op_type=name.op_type if name else "", op_name=dump.op_name,
                      fused_nodes=om_op.original_op_names if om_op is not None else (), tensors=tuple(tensors),
                      unknown_fields=dump.unknown_fields), arrays


def _export(to_npy: Path, op: DumpOpInfo, arrays: list[np.ndarray | None], force: bool) -> list[Path]:
    written = []
    for info, array in zip(op.tensors, arrays, strict=True):
        if array is None:
            continue
        target = to_npy / f"{op.path.name}.{info.role}.{info.index}.npy"
        check_output(target, force=force)
        with atomic_path(target) as tmp, open(tmp, "wb") as handle:
            np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        written.append(target)
    return written


def describe_npu_dump(path: Path, options: BinInfoOptions) -> BinInfoReport:
    """One dump file, or every dump file under a folder: ops, tensors, statistics, exported on request."""
    for given, flag in ((options.dtype, "--dtype"), (options.shape, "--shape")):
        if given:
            raise InferError(f"{flag}: {path} is an NPU dump, whose tensors say their own dtype and shape")
    if options.verify:
        raise InferError(f"--verify: {path} is an NPU dump, with no manifest of digests to check it against")
    if options.to_npy is not None and options.to_npy.exists() and not options.to_npy.is_dir():
        raise OutputExistsError(f"{options.to_npy}: exists and is not a folder (an NPU dump exports one .npy per "
                                "tensor)")
    ops = _OmOps(read_om(options.om) if options.om is not None else None)
    root = path if path.is_dir() else None
    files = [entry.path for entry in walk_dump_folder(path).entries] if root is not None else [path]
    described: list[DumpOpInfo] = []
    rows: list[InfoRow] = []
    notes: list[str] = []
    exported: list[Path] = []
    for file in files:
        try:
            op, arrays = _describe(file, ops)
        except InferError as exc:
            if root is None:
                raise
            notes.append(exc.message)  # one unreadable file of a folder: named, the others still shown
            continue
        described.append(op)
        for info in op.tensors:
            if info.stats is not None:
                rows.append(InfoRow(label=_label(op, info, root), stats=info.stats))
            if info.note:
                notes.append(f"{_label(op, info, root)}: {info.note}")
        if op.unknown_fields:
            notes.append(f"{op.path.name}: skipped fields a newer DumpData has: {', '.join(op.unknown_fields)}")
        if options.to_npy is not None:
            exported += _export(options.to_npy, op, arrays, options.force)
    om_text = f", layouts turned back with {options.om}" if options.om is not None else ""
    title = (f"{path}: NPU dump of {described[0].op_type} {described[0].op_name}{om_text}" if root is None else
             f"{path}: {len(described)} NPU dump file(s){om_text}")
    return BinInfoReport(title=title, rows=tuple(rows), exported=tuple(exported), dump_ops=tuple(described),
                         notes=tuple(notes))
