"""`FloatColumn` is the tuple of the same floats: equal, hashed alike, indexed and sliced alike."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from binio.float_column import FloatColumn


@given(st.lists(st.floats(allow_nan=False), max_size=20))
def test_a_float_column_is_the_tuple_of_its_floats(values: list[float]) -> None:
    column, plain = FloatColumn(values), tuple(values)
    assert column == plain and plain == column and hash(column) == hash(plain) and list(column) == values
    assert column[1:3] == plain[1:3] and column[::-1] == plain[::-1]
    for k in range(-len(values), len(values)):
        assert column[k] == plain[k]
    assert column != (*plain, 0.5)


def test_nan_is_kept_and_equal_only_to_itself_as_a_tuple_holds_it() -> None:
    column = FloatColumn([math.nan, 1.0])
    assert math.isnan(column[0]) and column != (math.nan, 1.0)  # NaN != NaN, as in the tuple of new NaNs
