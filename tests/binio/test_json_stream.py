"""`parse_pieces` gives `json.loads`'s value, and calls the object hook as json.loads does, however the text is cut
into pieces; text that is not one JSON value is NotStreamed, never a value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binio.json_stream import NotStreamed, parse_pieces

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_DOCUMENTS = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                             st.dictionaries(st.text(max_size=6), inner, max_size=6)),
                          max_leaves=40)


def _cut(text: str, sizes: list[int]) -> list[str]:
    """`text` in pieces of the given sizes (cycled), empty pieces among them."""
    pieces, at, k = [], 0, 0
    while at < len(text):
        size = sizes[k % len(sizes)]
        pieces.append(text[at:at + size])
        at += size
        k += 1
    return pieces


class _Recorder:
    """A hook that records what it was given and returns a marker in its place (as the manifest's reader does)."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, item: dict[str, Any]) -> Any:
        self.seen.append(json.dumps(item, sort_keys=True))
        return ("hooked", len(self.seen))


@settings(max_examples=300)
@given(_DOCUMENTS, st.lists(st.integers(0, 9), min_size=1, max_size=4), st.sampled_from([None, 0, 2]))
def test_pieces_give_json_loads_value_and_hook_calls(document: Any, sizes: list[int], indent: int | None) -> None:
    text = json.dumps(document, indent=indent)
    sizes = [size or 1 for size in sizes] if not any(sizes) else sizes  # some piece must hold text
    assert parse_pieces(_cut(text, sizes)) == json.loads(text)
    streamed, whole = _Recorder(), _Recorder()
    assert parse_pieces(_cut(text, sizes), streamed) == json.loads(text, object_hook=whole)
    assert streamed.seen == whole.seen  # the same objects, in the same order


@pytest.mark.parametrize("text", ['{"a": 1', '{"a": 1}}', '[1, 2,]', '{"a" 1}', '[1 2]', '', '   ', '{1: 2}',
                                  '"open', '12 13', '\ufeff{}', '[' * 100_000 + ']' * 100_000, '{"a": tru}',
                                  '1' * 5000, '[01]', '{"a": "\x01"}'])
@pytest.mark.parametrize("size", [1, 3, 1 << 18])
def test_text_json_loads_refuses_is_not_streamed(text: str, size: int) -> None:
    with pytest.raises((ValueError, RecursionError)):  # RecursionError: nested too deep
        json.loads(text)
    with pytest.raises(NotStreamed):
        parse_pieces(_cut(text, [size]))


def test_a_number_cut_between_pieces_is_read_whole() -> None:
    assert parse_pieces(["[12", "34, 5", ".25e", "1, tr", "ue, nu", "ll]"]) == [1234, 52.5, True, None]
    assert parse_pieces(["{\"files\": [", "{\"a\": 1}", ", {\"a\"", ": 2}]}"]) == {"files": [{"a": 1}, {"a": 2}]}
