"""binio.json_pieces: the text of json.dumps(indent=2) to the byte, and lists that are made only while written."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binio.atomic import write_json_atomic
from binio.json_pieces import StreamedList, json_pieces, plain

_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
            | st.text(max_size=12))
_KEYS = st.text(max_size=8) | st.integers() | st.floats() | st.booleans() | st.none()
_DOCUMENTS = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                          | st.dictionaries(_KEYS, inner, max_size=5), max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS)
def test_the_pieces_are_json_dumps_with_indent_2(document: object) -> None:
    assert "".join(json_pieces(document)) == json.dumps(document, indent=2)


def test_a_streamed_list_writes_as_the_list_it_stands_for(tmp_path: Path) -> None:
    rows = [{"name": f"{i:06d}.bin", "rows": i % 3, "score": i / 7, "nan": math.nan} for i in range(200)]
    made: list[int] = []

    def make() -> Iterator[dict[str, object]]:
        made.append(1)
        yield from rows

    document = {"inputs": [{"files": StreamedList(make), "empty": StreamedList(list), "t": (1, "é")}]}
    write_json_atomic(tmp_path / "d.json", document)
    expected = {"inputs": [{"files": rows, "empty": [], "t": [1, "é"]}]}
    assert (tmp_path / "d.json").read_bytes() == (json.dumps(expected, indent=2) + "\n").encode()
    assert plain(document) == expected and len(made) == 2  # made again each time it is read, never kept


def test_what_json_dumps_refuses_is_refused() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        "".join(json_pieces({"a": {1, 2}}))
    with pytest.raises(TypeError, match="keys must be"):
        "".join(json_pieces({(1, 2): 3}))
