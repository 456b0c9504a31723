"""An .om file's container: the 256-byte `ModelFileHeader` and the partition table(s) after it.

The layout is GE's (mindspore-ai/graphengine, `inc/framework/common/types.h`, `ModelFileHeader`,
`ModelPartitionTable`; the loader `base/common/helper/om_file_helper.cc`), checked against the real oms of
Ascend/ModelZoo-TensorFlow (docs/ascend-files.md has the provenance):

- little-endian; magic 0x444F4D49 (the bytes ``IMOD``), headsize 256, version, checksum[64], length (the bytes
  after the header), is_encrypt, is_checksum, modeltype, genmode (one byte each), name[32], ops, userdefineinfo[32],
  om_ir_version, then:
- version 0x10000000 (the first header): platform_version[20] at byte 156 and platform_type at 176;
- version 0x20000000: model_num at 156 pushes platform_version to 160 and platform_type to 180; newer GE adds a
  uint64 model_length at 184 (used instead of `length` when not zero) and is_unknow_model at 193.
- After the header, per model (`model_num` of them, else one), a partition table: uint32 count and count records
  {uint32 type, uint32 offset, uint32 size}, then the partitions back to back in table order; GE places each
  partition after the one before it (the records' offsets are not used), and so does this reader. Where the header
  has a model_length or the model is a flow model, GE's table is the wide one: {uint32 type, 4 bytes padding,
  uint64 offset, uint64 size}, after a count padded to 8 bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atc_wrap.ascend_files.errors import OmFileError
from binio.errors import permission_error
from binio.regular import refuse_special

OM_MAGIC = 0x444F4D49
HEADER_SIZE = 256
HEADER_V1 = 0x10000000
HEADER_V2 = 0x20000000
FLOW_MODEL_TYPE = 3

PARTITION_NAMES: dict[int, str] = {
    0: "MODEL_DEF", 1: "WEIGHTS_DATA", 2: "TASK_INFO", 3: "TBE_KERNELS", 4: "CUST_AICPU_KERNELS", 5: "SO_BINS",
    6: "FLOW_MODEL", 7: "FLOW_SUBMODEL", 8: "MODEL_INOUT_INFO", 9: "STATIC_TASK_DESC", 10: "DYNAMIC_TASK_DESC",
    11: "TASK_PARAM", 12: "TILING_DATA", 20: "PRE_MODEL_DESC", 21: "PRE_MODEL_SQE", 22: "PRE_KERNEL_ARGS",
    23: "PRE_MODEL_DESC_EXTEND", 24: "BUNDLE_MODEL_INFO",
}
MODEL_DEF = 0

# A model has a handful of partitions (GE accepts 1 to 6; 24 kinds are named); a larger count is a corrupt table,
# refused before anything is read from it.
_MAX_PARTITIONS = 64
_MAX_MODELS = 4096


@dataclass(frozen=True)
class OmHeader:
    """The 256-byte header of an om, field by field (strings cut at their first NUL)."""

    version: int  # 0x10000000 or 0x20000000
    header_size: int
    checksum: str  # 64 bytes, hex; zeros unless ATC signed the model
    length: int  # bytes after the header: model_length where the header has one, else the 32-bit length
    is_encrypted: bool
    is_checksum: int
    model_type: int  # 0 IR model, 1 standard, 2 OM tiny, 3 flow, 4 lite, 5 bundle
    gen_mode: int  # 0 offline (ATC), 1 online
    name: str
    ops: int
    user_define_info: str
    om_ir_version: int
    model_num: int | None  # None in a first-version header, which has no such field
    platform_version: str
    platform_type: int
    model_length: int  # second-version headers of newer GE only; 0 otherwise
    is_unknown_shape: bool  # second-version headers of newer GE only

    @property
    def wide_partition_table(self) -> bool:
        """Whether the partition table has 64-bit offsets and sizes (GE's rule in OmFileLoadHelper)."""
        return self.model_type == FLOW_MODEL_TYPE or self.model_length != 0

    @property
    def models(self) -> int:
        """How many partition tables follow the header (GE reads one per model when model_num > 1)."""
        return self.model_num if self.model_num is not None and self.model_num > 1 else 1


@dataclass(frozen=True)
class OmPartition:
    """One partition: its kind, where it lies in the file (absolute) and its size."""

    kind: int
    name: str  # MODEL_DEF, WEIGHTS_DATA, ... or PARTITION_<kind>
    offset: int
    size: int
    declared_offset: int  # what the table records, relative to the first partition of its model
    model_index: int


@dataclass(frozen=True)
class OmFile:
    """An om's header and partitions; `read` gives a partition's bytes."""

    path: Path
    size: int
    header: OmHeader
    partitions: tuple[OmPartition, ...]

    def partition(self, kind: int, model_index: int = 0) -> OmPartition | None:
        return next((p for p in self.partitions if p.kind == kind and p.model_index == model_index), None)

    def read(self, partition: OmPartition, *, limit: int | None = None) -> bytes:
        """The bytes of `partition`; one larger than `limit` (what its reader can parse) is refused unread."""
        if limit is not None and partition.size > limit:
            raise OmFileError(f"{self.path}: partition {partition.name} holds {partition.size:,} bytes, more than "
                              f"its reader parses ({limit:,})", hint="a damaged om, or not one ATC wrote")
        try:
            with self.path.open("rb") as stream:
                stream.seek(partition.offset)
                data = stream.read(partition.size)
        except OSError as err:
            raise _os_error(self.path, err) from err
        if len(data) != partition.size:
            raise OmFileError(f"{self.path}: partition {partition.name} should hold {partition.size} bytes at byte "
                              f"{partition.offset}, the file now has {len(data)} there (did it change?)")
        return data


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")


def starts_as_om(path: Path) -> bool:
    """Whether `path` is a regular file that begins with the om magic (``IMOD``): the one answer to "is this an
    om" (inspect's choice of reader, convert's read-back, model.json's descriptors). False for anything else, an
    unreadable file, a folder or a FIFO (never opened, so never waited on) too."""
    try:
        if not Path(path).is_file():
            return False
        with Path(path).open("rb") as stream:
            return int.from_bytes(stream.read(4), "little") == OM_MAGIC
    except OSError:
        return False


def parse_om_header(head: bytes, where: str | Path) -> OmHeader:
    """The header from an om's first bytes; `where` names the file in refusals. Not an om (too short, wrong magic,
    unknown version) is refused here; encryption and the file's length are checked by `read_om_file`."""
    if len(head) < 4 or int.from_bytes(head[:4], "little") != OM_MAGIC:
        found = head[:4]
        shown = f"{found!r} (0x{int.from_bytes(found, 'little'):08X})" if len(found) == 4 else \
            f"{len(head)} byte{'s' if len(head) != 1 else ''}"
        raise OmFileError(f"{where}: not an om file: expected the magic b'IMOD' (0x{OM_MAGIC:08X}) at byte 0, "
                          f"found {shown}")
    if len(head) < HEADER_SIZE:
        raise OmFileError(f"{where}: truncated om: expected its {HEADER_SIZE}-byte header, the file has "
                          f"{len(head)} bytes")
    header_size, version = struct.unpack_from("<II", head, 4)
    if version not in (HEADER_V1, HEADER_V2):
        raise OmFileError(f"{where}: unknown om header version 0x{version:08X}: expected 0x{HEADER_V1:08X} or "
                          f"0x{HEADER_V2:08X}")
    checksum = head[12:76].hex()
    length, = struct.unpack_from("<I", head, 76)
    is_encrypt, is_checksum, model_type, gen_mode = head[80], head[81], head[82], head[83]
    name = _text(head[84:116])
    ops, = struct.unpack_from("<I", head, 116)
    user_define_info = _text(head[120:152])
    om_ir_version, = struct.unpack_from("<I", head, 152)
    if version == HEADER_V1:
        model_num = None
        platform_version, platform_type = _text(head[156:176]), head[176]
        model_length, is_unknown = 0, False
    else:
        model_num, = struct.unpack_from("<I", head, 156)
        platform_version, platform_type = _text(head[160:180]), head[180]
        model_length, = struct.unpack_from("<Q", head, 184)
        is_unknown = bool(head[193])
    return OmHeader(version=version, header_size=header_size, checksum=checksum,
                    length=model_length if model_length else length, is_encrypted=is_encrypt != 0,
                    is_checksum=is_checksum, model_type=model_type, gen_mode=gen_mode, name=name, ops=ops,
                    user_define_info=user_define_info, om_ir_version=om_ir_version, model_num=model_num,
                    platform_version=platform_version, platform_type=platform_type, model_length=model_length,
                    is_unknown_shape=is_unknown)


def parse_partitions(read_at: Callable[[int, int], bytes], body_length: int, header: OmHeader,
                     where: str | Path) -> tuple[OmPartition, ...]:
    """The partitions of the `body_length` bytes after the header, read through `read_at(offset, count)` (offsets
    from the end of the header): one table per model, each followed by its partitions. Only the tables are read;
    offsets in the result are absolute in the file."""
    wide = header.wide_partition_table
    count_size, record_size = (8, 24) if wide else (4, 12)
    found: list[OmPartition] = []
    pos = 0
    if header.models > _MAX_MODELS:
        raise OmFileError(f"{where}: corrupt om: its header declares {header.models} models: expected at most "
                          f"{_MAX_MODELS}")
    for model_index in range(header.models):
        label = f"partition table{f' of model {model_index}' if header.models > 1 else ''}"
        if pos + count_size > body_length:
            raise OmFileError(f"{where}: truncated om: expected the {label} at byte {HEADER_SIZE + pos}, "
                              f"{body_length - pos} bytes remain")
        count, = struct.unpack_from("<I", _exactly(read_at, pos, 4, where))
        room = (body_length - pos - count_size) // record_size
        if not 1 <= count <= min(_MAX_PARTITIONS, room):
            raise OmFileError(f"{where}: corrupt om: its {label} declares {count} partitions: expected 1 to "
                              f"{min(_MAX_PARTITIONS, room)}")
        table = _exactly(read_at, pos + count_size, count * record_size, where)
        records = [struct.unpack_from("<I4xQQ" if wide else "<III", table, index * record_size)
                   for index in range(count)]
        pos += count_size + count * record_size
        for kind, declared, size in records:
            name = PARTITION_NAMES.get(kind, f"PARTITION_{kind}")
            if size > body_length - pos:
                raise OmFileError(f"{where}: truncated om: partition {name} declares {size} bytes at byte "
                                  f"{HEADER_SIZE + pos}, {body_length - pos} remain")
            found.append(OmPartition(kind=kind, name=name, offset=HEADER_SIZE + pos, size=size,
                                     declared_offset=declared, model_index=model_index))
            pos += size
    return tuple(found)


def _exactly(read_at: Callable[[int, int], bytes], at: int, count: int, where: str | Path) -> bytes:
    data = read_at(at, count)
    if len(data) != count:  # the file shrank after its size was read
        raise OmFileError(f"{where}: truncated om: expected {count} bytes at byte {HEADER_SIZE + at}, found "
                          f"{len(data)}")
    return data


def _check_whole(header: OmHeader, size: int, where: str | Path) -> None:
    if header.is_encrypted:
        raise OmFileError(f"{where}: the om is encrypted (is_encrypt = 1 in its header): expected a plain om; an "
                          f"encrypted model can only be loaded by CANN with its key")
    if size != HEADER_SIZE + header.length:
        state = "truncated om" if size < HEADER_SIZE + header.length else "not a whole om"
        raise OmFileError(f"{where}: {state}: its header declares {header.length} bytes after the {HEADER_SIZE}-byte "
                          f"header ({HEADER_SIZE + header.length} in all), the file has {size}")


def parse_om(data: bytes, where: str | Path) -> tuple[OmHeader, tuple[OmPartition, ...]]:
    """The header and partitions of a whole om held in memory; refused as `read_om_file` refuses."""
    header = parse_om_header(data[:HEADER_SIZE], where)
    _check_whole(header, len(data), where)
    body = memoryview(data)[HEADER_SIZE:]
    return header, parse_partitions(lambda at, count: bytes(body[at:at + count]), len(body), header, where)


def _os_error(path: Path, err: OSError) -> OmFileError:
    if isinstance(err, PermissionError):
        refusal = permission_error(err)
        return OmFileError(refusal.message, hint=refusal.hint)
    reason = err.strerror or type(err).__name__
    return OmFileError(f"{path}: cannot read the om: {reason}")


def read_om_file(path: str | Path) -> OmFile:
    """The header and partitions of the om at `path`, reading only those. Refused with one line each: not an om
    (magic, version), truncated or padded (its header's length against the file's), encrypted, or a partition
    table that does not fit the file."""
    om_path = Path(path)
    refuse_special(om_path, "an om file")
    try:
        with om_path.open("rb") as stream:
            header = parse_om_header(stream.read(HEADER_SIZE), om_path)
            size = os.fstat(stream.fileno()).st_size
            _check_whole(header, size, om_path)

            def read_at(at: int, count: int) -> bytes:
                stream.seek(HEADER_SIZE + at)
                return stream.read(count)

            partitions = parse_partitions(read_at, size - HEADER_SIZE, header, om_path)
    except OSError as err:
        raise _os_error(om_path, err) from err
    return OmFile(path=om_path, size=size, header=header, partitions=partitions)
