"""The hand-written protobuf reader agrees with google.protobuf's writer, skips what it does not ask for, and
refuses malformed bytes with WireError only."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atc_wrap.ascend_files._protowire import MAX_DEPTH, Message, WireError, iter_fields
from tests.atc_wrap.ascend_writer import DumpData, ModelDef, TensorDescriptor


def test_scalars_strings_and_signed_dims_read_as_protobuf_wrote_them() -> None:
    desc = TensorDescriptor(name="x", dtype=2, layout="NC1HWC0", size=-5)
    desc.shape.dim.extend([-1, 0, 2**40, -(2**63)])
    message = Message(desc.SerializeToString())
    assert message.string(1) == "x"
    assert message.uint(2) == 2
    assert message.string(4) == "NC1HWC0"
    assert message.int64(10) == -5
    shape = message.message(3)
    assert shape is not None
    assert shape.ints(1) == (-1, 0, 2**40, -(2**63))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=20), st.text(max_size=30),
       st.integers(min_value=0, max_value=2**64 - 1))
def test_any_uint64s_and_text_round_trip(dims: list[int], name: str, dump_time: int) -> None:
    dump = DumpData(op_name=name, dump_time=dump_time)
    dump.output.add().shape.dim.extend(dims)
    message = Message(dump.SerializeToString())
    assert message.string(6) == name
    assert message.uint(2) == dump_time
    (output,) = message.messages(3)
    shape = output.message(3)
    assert (shape.ints(1, signed=False) if shape is not None else ()) == tuple(dims)


def test_floats_and_booleans() -> None:
    model = ModelDef()
    model.attr["f"].f = 0.25
    model.attr["b"].b = True
    model.attr["l"].list.f.extend([1.5, -2.0])
    entries = dict(Message(model.SerializeToString()).map_entries(11))
    f_attr, b_attr, l_attr = entries["f"], entries["b"], entries["l"]
    assert f_attr is not None and f_attr.float32(4) == 0.25
    assert b_attr is not None and b_attr.boolean(5) is True
    listed = l_attr.message(1) if l_attr is not None else None
    assert listed is not None and listed.floats(4) == (1.5, -2.0)


def test_fields_it_does_not_know_are_skipped() -> None:
    dump = DumpData(op_name="conv", future="a field a newer CANN added")
    message = Message(dump.SerializeToString())
    assert message.string(6) == "conv"
    assert 99 in message.numbers()


def test_unpacked_and_packed_repeated_ints_are_both_read() -> None:
    unpacked = bytes([0x08, 0x01, 0x08, 0x02])  # field 1 varint 1, field 1 varint 2
    packed = bytes([0x0A, 0x02, 0x03, 0x04])  # field 1 length 2: 3, 4
    assert Message(unpacked + packed).ints(1) == (1, 2, 3, 4)


def test_groups_are_skipped_whole() -> None:
    group = bytes([0x2B, 0x08, 0x07, 0x33, 0x34, 0x2C])  # group 5 { 1: 7, group 6 {} }
    name = bytes([0x0A, 0x01]) + b"n"
    message = Message(group + name)
    assert message.string(1) == "n"
    assert message.numbers() == (1,)


def test_the_last_record_of_a_scalar_wins() -> None:
    assert Message(bytes([0x10, 0x01, 0x10, 0x05])).uint(2) == 5


@pytest.mark.parametrize(("data", "says"), [
    (bytes([0x08]), "runs past the end"),
    (bytes([0x08, 0x80]), "runs past the end"),
    (bytes([0x08]) + bytes([0xFF] * 10) + bytes([0x01]), "longer than 10 bytes"),
    (bytes([0x0A, 0x05, 0x61]), "field 1 at byte 0 declares 5 bytes, only 1 follow"),
    (bytes([0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]), "only 0 follow"),
    (bytes([0x0E, 0x00]), "wire type 6"),
    (bytes([0x0F, 0x00]), "wire type 7"),
    (bytes([0x00, 0x00]), "field number 0"),
    (bytes([0x2C]), "closes no group"),
    (bytes([0x2B, 0x08, 0x01]), "not closed"),
    (bytes([0x2B, 0x34]), "closed by an end-group tag of field 6"),
    (bytes([0x09, 0x01, 0x02]), "64-bit field 1 at byte 0"),
    (bytes([0x0D, 0x01]), "32-bit field 1"),
])
def test_malformed_bytes_are_refused_by_name(data: bytes, says: str) -> None:
    with pytest.raises(WireError, match=says):
        Message(data)


def test_a_field_read_as_the_wrong_kind_is_refused() -> None:
    message = Message(bytes([0x08, 0x01]))
    with pytest.raises(WireError, match="field 1 has wire type 0, expected length-delimited"):
        message.string(1)


def test_nesting_past_the_bound_is_refused_not_a_recursion_error() -> None:
    data = b""
    for _ in range(MAX_DEPTH + 5):
        data = bytes([0x0A]) + _varint(len(data)) + data
    message: Message | None = Message(data)
    with pytest.raises(WireError, match="nest deeper"):
        while message is not None:
            message = message.message(1)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_parse_or_raise_wire_error_only(data: bytes) -> None:
    try:
        message = Message(data)
        for number in message.numbers():
            for read in (message.uint, message.int64, message.float32, message.string, message.ints,
                         message.floats, message.messages, message.raw_all):
                with contextlib.suppress(WireError):
                    read(number)
        list(iter_fields(data))
    except WireError:
        pass
