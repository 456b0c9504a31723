"""Whatever an om or dump file holds, reading it ends in a model or in the readers' typed error (InferError, one
line), never IndexError, struct.error, RecursionError or MemoryError: cut at every byte of the header and tables,
random bytes, huge declared lengths and counts, messages nested past any bound."""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atc_wrap.ascend_files.errors import NpuDumpError, OmFileError
from atc_wrap.ascend_files.npu_dump import parse_npu_dump, read_npu_dump
from atc_wrap.ascend_files.om_file import parse_om
from atc_wrap.ascend_files.om_model import read_om
from binio.errors import InferError
from tests.atc_wrap.ascend_samples import write_sample_om
from tests.atc_wrap.ascend_writer import DumpTensorSpec, dump_bytes, om_bytes
from tests.hostile import fifo_at

TABLE_END = 256 + 4 + 12 * 4  # the sample om's header and 32-bit table of four partitions


@pytest.fixture(scope="module")
def sample_om(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_sample_om(tmp_path_factory.mktemp("hostile")).read_bytes()


def _read_om_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "hostile.om"
    path.write_bytes(data)
    try:
        read_om(path)
    except OmFileError as err:
        assert "\n" not in err.message and str(path) in err.message


@pytest.mark.slow
def test_an_om_cut_at_every_byte_of_its_header_and_table_is_refused(tmp_path: Path, sample_om: bytes) -> None:
    for cut in range(TABLE_END + 1):
        path = tmp_path / "cut.om"
        path.write_bytes(sample_om[:cut])
        with pytest.raises(OmFileError, match=r"cut\.om: (not an om file|truncated om)"):
            read_om(path)


def test_an_om_cut_anywhere_in_its_model_def_is_refused(tmp_path: Path, sample_om: bytes) -> None:
    for cut in range(TABLE_END, len(sample_om), 7):
        with pytest.raises(OmFileError, match="truncated om"):
            parse_om(sample_om[:cut], "cut.om")


@pytest.mark.slow
def test_a_model_def_cut_short_inside_a_whole_om_is_refused(tmp_path: Path, sample_om: bytes) -> None:
    header_end = 256 + 4 + 12 * 4
    size, = struct.unpack_from("<I", sample_om, 256 + 4 + 8)
    definition = sample_om[header_end:header_end + size]
    for cut in range(0, len(definition), 5):
        _read_om_bytes(tmp_path, om_bytes([(0, definition[:cut])]))


@pytest.mark.parametrize(("offset", "value", "says"), [
    (76, 0xFFFFFFFF, "truncated om: its header declares 4294967295 bytes"),
    (256, 0xFFFFFFFF, "declares 4294967295 partitions: expected 1 to"),
    (256, 0, "declares 0 partitions"),
    (256 + 4 + 8, 0x7FFFFFFF, "truncated om: partition MODEL_DEF declares 2147483647 bytes"),
])
def test_huge_declared_lengths_and_counts_are_refused_before_reading(sample_om: bytes, offset: int, value: int,
                                                                     says: str) -> None:
    data = bytearray(sample_om)
    struct.pack_into("<I", data, offset, value)
    with pytest.raises(OmFileError, match=says):
        parse_om(bytes(data), "huge.om")


def test_a_header_declaring_millions_of_models_is_refused(sample_om: bytes) -> None:
    data = bytearray(sample_om)
    struct.pack_into("<I", data, 156, 10**9)
    with pytest.raises(OmFileError, match="declares 1000000000 models: expected at most"):
        parse_om(bytes(data), "models.om")


def test_attributes_nested_past_the_bound_are_refused_not_a_recursion_error(tmp_path: Path) -> None:
    # ModelDef.attr["a"] = AttrDef{func = NamedAttrs{attr["a"] = AttrDef{func = ...}}}, 5000 deep
    attr = b""
    for _ in range(5000):
        named = _field(2, _field(1, b"a") + _field(2, attr))  # NamedAttrs.attr entry {key, value}
        attr = _field(10, named)  # AttrDef.func
    definition = _field(7, b"") + _field(11, _field(1, b"a") + _field(2, attr))
    path = tmp_path / "deep.om"
    path.write_bytes(om_bytes([(0, definition)]))
    with pytest.raises(OmFileError, match="nest deeper than"):
        read_om(path)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_random_model_defs_end_in_a_model_or_a_typed_error(tmp_path: Path, definition: bytes) -> None:
    _read_om_bytes(tmp_path, om_bytes([(0, definition)]))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_random_files_are_never_an_om_by_accident(data: bytes) -> None:
    with pytest.raises(OmFileError):
        parse_om(data, "random.om")


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.integers(0, 310))
def test_random_headers_after_the_magic_end_in_a_typed_error(tmp_path: Path, tail: bytes, declared: int) -> None:
    data = bytearray(b"IMOD" + tail.ljust(300, b"\0"))
    struct.pack_into("<I", data, 8, 0x20000000)
    struct.pack_into("<I", data, 76, declared)
    try:
        header, partitions = parse_om(bytes(data), "random.om")
    except OmFileError:
        return
    assert all(p.offset + p.size <= len(data) for p in partitions)
    assert header.length == len(data) - 256


def _sample_dump() -> bytes:
    import numpy as np

    return dump_bytes("op", [DumpTensorSpec(np.ones((2, 3), np.float32), "ND")],
                      [DumpTensorSpec(np.ones((1, 1, 16, 16), np.float16), "FRACTAL_NZ", original_name="x")])


def test_a_dump_cut_at_every_byte_is_refused() -> None:
    data = _sample_dump()
    for cut in range(len(data)):
        with pytest.raises(NpuDumpError):
            parse_npu_dump(data[:cut], "cut")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_dump_files_end_in_a_dump_or_a_typed_error(data: bytes) -> None:
    framed = len(data).to_bytes(8, "little") + data
    for candidate in (data, framed):
        try:
            dump = parse_npu_dump(candidate, "random")
        except NpuDumpError:
            continue
        for tensor in dump.inputs + dump.outputs:
            with contextlib.suppress(InferError):
                tensor.origin_array("ND", tensor.shape)


def test_a_dump_that_declares_exabytes_of_tensor_data_is_refused(tmp_path: Path) -> None:
    # OpOutput{size = 2**60}: refused by the sizes not adding up, not by trying to allocate them
    output = bytes([0x30]) + _varint(2**60)
    header = _field(3, output)
    path = tmp_path / "huge"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(NpuDumpError, match="declare 1152921504606846976 bytes"):
        read_npu_dump(path)


@pytest.mark.parametrize("garbage", [False, True], ids=["sizes-disagree", "header-not-a-dump"])
def test_a_4_gib_dump_whose_header_is_wrong_is_refused_before_its_data_is_read(tmp_path: Path,
                                                                             garbage: bool) -> None:
    """A dump of 4 GiB (sparse) whose header declares 24 bytes of data, or is no DumpData at all: refused from its
    first bytes; it was read whole (4 GiB, then copied tensor by tensor) before the sizes were compared."""
    import tracemalloc

    data = _sample_dump()
    length = int.from_bytes(data[:8], "little")
    head = data[:8] + (b"\xff" * length if garbage else data[8:8 + length])
    path = tmp_path / "Conv2D.conv.1.2.1700000000000000"
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(4 * 2**30)
    tracemalloc.start()
    try:
        with pytest.raises(NpuDumpError, match="not a DumpData message" if garbage else "the file has 4294967"):
            read_npu_dump(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, peak


def test_a_dump_read_from_its_file_is_the_dump_parsed_from_its_bytes(tmp_path: Path) -> None:
    data = _sample_dump()
    path = tmp_path / "Conv2D.conv.1.2.1700000000000000"
    path.write_bytes(data)
    read, parsed = read_npu_dump(path), parse_npu_dump(data, path, None)
    assert read.inputs + read.outputs == parsed.inputs + parsed.outputs
    assert (read.op_name, read.attrs, read.unknown_fields) == (parsed.op_name, parsed.attrs, parsed.unknown_fields)


@pytest.mark.slow
@pytest.mark.parametrize(("read", "what"), [(read_om, "an om file"), (read_npu_dump, "an NPU dump file")])
def test_a_fifo_in_place_of_an_om_or_a_dump_is_refused_not_waited_on(tmp_path: Path, read: Any, what: str) -> None:
    with fifo_at(tmp_path / "Conv2D.conv.1.2.1700000000000000") as pipe, pytest.raises(InferError) as refused:
        read(pipe)
    assert refused.value.message == (f"{pipe}: a FIFO (named pipe), not a regular file; expected {what} (reading it "
                                     "could wait forever)")
