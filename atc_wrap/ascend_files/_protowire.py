"""The protobuf wire format, read by hand: enough to decode the messages Ascend's files hold (an om's ModelDef, a
dump's DumpData) without their generated code or CANN.

Written from the wire-format specification (protobuf.dev/programming-guides/encoding): a message is a run of
(tag, value) records, tag = field_number << 3 | wire_type; wire types 0 varint, 1 fixed64, 2 length-delimited,
5 fixed32 (3 and 4, the deprecated groups, are skipped). Fields a caller does not ask for are never decoded, so
fields newer than the definition followed are skipped, not fatal.

Hostile input cannot make this misbehave: every length is checked against the bytes that are there before any
slice (slices are views, nothing is copied or allocated from a declared size), varints stop at ten bytes, group
nesting and message nesting are bounded, and every malformation raises `WireError`, never IndexError or
RecursionError.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from binio.errors import InferError

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
START_GROUP = 3
END_GROUP = 4
FIXED32 = 5

MAX_DEPTH = 64
"""Messages nested deeper than this are refused: far past what GE writes (an attr holding a graph holding an op
holding an attr is four), short of Python's recursion limit."""

_MAX_VARINT_BYTES = 10
_MAX_GROUP_DEPTH = 32


class WireError(InferError):
    """Bytes that are not a well-formed protobuf message (or not the message they are read as)."""


def read_varint(data: memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it."""
    result = 0
    for index in range(_MAX_VARINT_BYTES):
        if pos + index >= len(data):
            raise WireError(f"varint at byte {pos} runs past the end of its {len(data)}-byte message")
        byte = data[pos + index]
        result |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos + index + 1
    raise WireError(f"varint at byte {pos} is longer than {_MAX_VARINT_BYTES} bytes")


def _float32(bits: int) -> float:
    return float(struct.unpack("<f", bits.to_bytes(4, "little"))[0])


def as_signed64(value: int) -> int:
    """A varint's 64 bits as the two's complement int64 (or int32, sign-extended on the wire) they encode."""
    return value - (1 << 64) if value >= 1 << 63 else value


@dataclass(frozen=True)
class Field:
    """One record of a message: its number, wire type and value (an int for varint and fixed, a view for bytes)."""

    number: int
    wire_type: int
    value: int | memoryview

    @property
    def integer(self) -> int:
        if not isinstance(self.value, int):
            raise WireError(f"field {self.number} holds bytes where a number was expected")
        return self.value

    @property
    def view(self) -> memoryview:
        if not isinstance(self.value, memoryview):
            raise WireError(f"field {self.number} holds a number where bytes were expected")
        return self.value


def _skip_group(data: memoryview, pos: int, number: int) -> int:
    """The position after the END_GROUP that closes the group `number` opened just before `pos`."""
    open_groups = [number]
    while open_groups:
        if pos >= len(data):
            raise WireError(f"group {open_groups[-1]} is not closed before the end of its message")
        tag_at = pos
        tag, pos = read_varint(data, pos)
        wire_type, field_number = tag & 7, tag >> 3
        if wire_type == START_GROUP:
            if len(open_groups) >= _MAX_GROUP_DEPTH:
                raise WireError(f"groups nest deeper than {_MAX_GROUP_DEPTH} at byte {pos}")
            open_groups.append(field_number)
        elif wire_type == END_GROUP:
            if field_number != open_groups[-1]:
                raise WireError(f"group {open_groups[-1]} closed by an end-group tag of field {field_number}")
            open_groups.pop()
        else:
            _, pos = _read_value(data, pos, wire_type, field_number, tag_at)
    return pos


def _read_value(data: memoryview, pos: int, wire_type: int, number: int, tag_at: int) -> tuple[int | memoryview, int]:
    """The value of the record whose tag (field `number`, at byte `tag_at`) ends at `pos`."""
    if wire_type == VARINT:
        return read_varint(data, pos)
    if wire_type in (FIXED64, FIXED32):
        width = 8 if wire_type == FIXED64 else 4
        if pos + width > len(data):
            raise WireError(f"{width * 8}-bit field {number} at byte {tag_at} runs past the end of its "
                            f"{len(data)}-byte message")
        return int.from_bytes(data[pos:pos + width], "little"), pos + width
    if wire_type == LENGTH_DELIMITED:
        length, start = read_varint(data, pos)
        if length > len(data) - start:
            raise WireError(f"field {number} at byte {tag_at} declares {length} bytes, only {len(data) - start} "
                            f"follow")
        return data[start:start + length], start + length
    raise WireError(f"wire type {wire_type} of field {number} at byte {tag_at} is not one of 0, 1, 2, 5 "
                    f"(or a group)")


def iter_fields(data: bytes | memoryview) -> Iterator[Field]:
    """Every record of one message, in file order; groups are skipped whole."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    pos = 0
    while pos < len(view):
        tag_at = pos
        tag, pos = read_varint(view, pos)
        number, wire_type = tag >> 3, tag & 7
        if not 1 <= number <= 0x1FFFFFFF:
            raise WireError(f"field number {number} at byte {tag_at} is outside 1..536870911")
        if wire_type == START_GROUP:
            pos = _skip_group(view, pos, number)
            continue
        if wire_type == END_GROUP:
            raise WireError(f"end-group tag of field {number} at byte {tag_at} closes no group")
        value, pos = _read_value(view, pos, wire_type, number, tag_at)
        yield Field(number, wire_type, value)


class Message:
    """One decoded message: its records grouped by field number, read on demand by the accessors below.

    `depth` counts the messages this one sits in; `message()`/`messages()` refuse to go past `MAX_DEPTH`, so a
    schema that nests (an attr holding a graph holding attrs) stays bounded whatever the input.
    """

    __slots__ = ("_fields", "depth", "what")

    def __init__(self, data: bytes | memoryview, *, what: str = "message", depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise WireError(f"{what}: messages nest deeper than {MAX_DEPTH}")
        self.what = what
        self.depth = depth
        self._fields: dict[int, list[Field]] = {}
        try:
            for record in iter_fields(data):
                self._fields.setdefault(record.number, []).append(record)
        except WireError as err:
            raise WireError(f"{what}: {err}") from None

    def numbers(self) -> tuple[int, ...]:
        """The field numbers present, in order of first appearance."""
        return tuple(self._fields)

    def has(self, number: int) -> bool:
        return number in self._fields

    def _records(self, number: int, wire_types: tuple[int, ...], kind: str) -> list[Field]:
        records = self._fields.get(number, [])
        for record in records:
            if record.wire_type not in wire_types:
                raise WireError(f"{self.what}: field {number} has wire type {record.wire_type}, "
                                f"expected {kind} (wire type {' or '.join(map(str, wire_types))})")
        return records

    def _last(self, number: int, wire_types: tuple[int, ...], kind: str) -> Field | None:
        # proto3: the last record of a non-repeated field wins
        records = self._records(number, wire_types, kind)
        return records[-1] if records else None

    def uint(self, number: int, default: int = 0) -> int:
        """A varint field (uint32/uint64/enum/bool) as unsigned; `default` when absent."""
        record = self._last(number, (VARINT,), "a varint")
        return default if record is None else record.integer

    def int64(self, number: int, default: int = 0) -> int:
        """A varint field (int32/int64) as signed."""
        record = self._last(number, (VARINT,), "a varint")
        return default if record is None else as_signed64(record.integer)

    def boolean(self, number: int, default: bool = False) -> bool:
        return bool(self.uint(number, int(default)))

    def float32(self, number: int, default: float = 0.0) -> float:
        record = self._last(number, (FIXED32,), "a 32-bit float")
        if record is None:
            return default
        return _float32(record.integer)

    def raw(self, number: int) -> memoryview | None:
        """A length-delimited field's bytes (a view, not a copy); None when absent."""
        record = self._last(number, (LENGTH_DELIMITED,), "length-delimited bytes")
        return None if record is None else record.view

    def raw_all(self, number: int) -> list[memoryview]:
        return [r.view for r in self._records(number, (LENGTH_DELIMITED,), "length-delimited bytes")]

    def string(self, number: int, default: str = "") -> str:
        """A string field, UTF-8; bytes that are not UTF-8 are kept with replacement characters."""
        value = self.raw(number)
        return default if value is None else bytes(value).decode("utf-8", errors="replace")

    def strings(self, number: int) -> tuple[str, ...]:
        return tuple(bytes(v).decode("utf-8", errors="replace") for v in self.raw_all(number))

    def message(self, number: int, what: str | None = None) -> Message | None:
        """A sub-message field; None when absent."""
        value = self.raw(number)
        return None if value is None else Message(value, what=what or f"{self.what}.{number}", depth=self.depth + 1)

    def messages(self, number: int, what: str | None = None) -> list[Message]:
        label = what or f"{self.what}.{number}"
        return [Message(v, what=label, depth=self.depth + 1) for v in self.raw_all(number)]

    def ints(self, number: int, *, signed: bool = True) -> tuple[int, ...]:
        """A repeated integer field, packed or not (a writer may mix both)."""
        values: list[int] = []
        for record in self._records(number, (VARINT, LENGTH_DELIMITED), "varints"):
            if record.wire_type == VARINT:
                values.append(record.integer)
                continue
            packed = record.view
            pos = 0
            try:
                while pos < len(packed):
                    value, pos = read_varint(packed, pos)
                    values.append(value)
            except WireError as err:
                raise WireError(f"{self.what}: packed field {number}: {err}") from None
        return tuple(as_signed64(v) for v in values) if signed else tuple(values)

    def floats(self, number: int) -> tuple[float, ...]:
        """A repeated float field, packed or not."""
        values: list[float] = []
        for record in self._records(number, (FIXED32, LENGTH_DELIMITED), "32-bit floats"):
            if record.wire_type == FIXED32:
                values.append(_float32(record.integer))
                continue
            packed = record.view
            if len(packed) % 4:
                raise WireError(f"{self.what}: packed floats of field {number} are {len(packed)} bytes, "
                                f"not a multiple of 4")
            values.extend(v for (v,) in struct.iter_unpack("<f", packed))
        return tuple(values)

    def map_entries(self, number: int, what: str | None = None) -> list[tuple[str, Message | None]]:
        """A `map<string, Message>` field: (key, value) per entry, in file order (key = 1, value = 2)."""
        label = what or f"{self.what}.{number}"
        entries: list[tuple[str, Message | None]] = []
        for entry in self.messages(number, label):
            entries.append((entry.string(1), entry.message(2, f"{label}[{entry.string(1)!r}]")))
        return entries
