"""GE's attribute values (`ge.proto.AttrDef`, ge_ir.proto) as plain Python values.

AttrDef is a oneof: list = 1, s = 2, i = 3, f = 4, b = 5, bt = 7, func = 10 (NamedAttrs), td = 11 (a tensor
descriptor), t = 12 (a tensor), g = 13 (a graph), list_list_int = 14, dt = 15 (a GE DataType). ListValue holds
s = 2, i = 3, f = 4, b = 5, bt = 7, td = 8, t = 9, g = 10, na = 11, dt = 12 (and val_type = 20, which says which
one; ATC leaves it 0 on some string lists, so the list present is used instead). NamedAttrs{name = 1,
attr = map<string, AttrDef> 2}.

Bytes, tensors, tensor descriptors and graphs are not decoded (an om's attributes hold kernels and weights that
way): they become `Opaque`, with their size, so a large om costs no copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from atc_wrap.ascend_files._protowire import Message
from binio.dtypes import ge_dtype_name


@dataclass(frozen=True)
class Opaque:
    """A value kept undecoded: what it is (bytes, tensor, tensor_desc, graph) and how many bytes it takes."""

    kind: str
    size: int


@dataclass(frozen=True)
class NamedAttrs:
    """GE's NamedAttrs: a name and attributes, as AIPP's parameters are stored on an om's Data op."""

    name: str
    attrs: tuple[tuple[str, AttrValue], ...]

    def get(self, key: str) -> AttrValue | None:
        return next((value for name, value in self.attrs if name == key), None)


AttrValue: TypeAlias = "str | int | float | bool | Opaque | NamedAttrs | tuple[AttrValue, ...] | None"
"""str, int, float, bool; a GE dtype as its name (``float32``); a list as a tuple (list_list_int as a tuple of
tuples); None for an AttrDef with no value set."""

_OPAQUE_FIELDS = {7: "bytes", 11: "tensor_desc", 12: "tensor", 13: "graph"}
_OPAQUE_LIST_FIELDS = {7: "bytes", 8: "tensor_desc", 9: "tensor", 10: "graph"}


def attr_value(attr: Message | None) -> AttrValue:
    """The value one AttrDef holds."""
    if attr is None:
        return None
    if attr.has(2):
        return attr.string(2)
    if attr.has(3):
        return attr.int64(3)
    if attr.has(4):
        return attr.float32(4)
    if attr.has(5):
        return attr.boolean(5)
    if attr.has(15):
        return ge_dtype_name(attr.int64(15))
    if attr.has(1):
        listed = attr.message(1, f"{attr.what}.list")
        return _list_value(listed) if listed is not None else ()
    if attr.has(10):
        func = attr.message(10, f"{attr.what}.func")
        return named_attrs(func) if func is not None else None
    if attr.has(14):
        outer = attr.message(14, f"{attr.what}.list_list_int")
        return tuple(inner.ints(1) for inner in outer.messages(1)) if outer is not None else ()
    for number, kind in _OPAQUE_FIELDS.items():
        raw = attr.raw(number)
        if raw is not None:
            return Opaque(kind, len(raw))
    return None


def _list_value(listed: Message) -> tuple[AttrValue, ...]:
    if listed.has(2):
        return listed.strings(2)
    if listed.has(3):
        return listed.ints(3)
    if listed.has(4):
        return listed.floats(4)
    if listed.has(5):
        return tuple(bool(v) for v in listed.ints(5, signed=False))
    if listed.has(11):
        return tuple(named_attrs(item) for item in listed.messages(11, f"{listed.what}.na"))
    if listed.has(12):
        return tuple(ge_dtype_name(v) for v in listed.ints(12))
    for number, kind in _OPAQUE_LIST_FIELDS.items():
        if listed.has(number):
            return tuple(Opaque(kind, len(raw)) for raw in listed.raw_all(number))
    return ()


def attr_json(value: AttrValue) -> object:
    """An attribute value as JSON: Opaque as {"opaque": kind, "bytes": size}, NamedAttrs as {"name", "attrs"}."""
    if isinstance(value, Opaque):
        return {"opaque": value.kind, "bytes": value.size}
    if isinstance(value, NamedAttrs):
        return {"name": value.name, "attrs": {key: attr_json(inner) for key, inner in value.attrs}}
    if isinstance(value, tuple):
        return [attr_json(item) for item in value]
    return value


def named_attrs(message: Message) -> NamedAttrs:
    return NamedAttrs(message.string(1), tuple(attr_map(message, 2)))


def attr_map(message: Message, number: int, only: frozenset[str] | None = None) -> list[tuple[str, AttrValue]]:
    """A `map<string, AttrDef>` field decoded, by key: a protobuf map has no order, and its writers serialise one
    in hash order (the same om written twice may differ), so file order would make inspect's lines and JSON vary.
    With `only`, just those keys (the rest skipped undecoded)."""
    found: list[tuple[str, AttrValue]] = []
    for entry in message.messages(number, f"{message.what}.attr"):
        key = entry.string(1)
        if only is not None and key not in only:
            continue
        found.append((key, attr_value(entry.message(2, f"{message.what}.attr[{key!r}]"))))
    return sorted(found, key=lambda item: item[0])
