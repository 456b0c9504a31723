"""Indexing for the sequences that make their items when asked (a dataset's batches, its files, a comparison's
batch results): the positions an index or a slice stands for, as a tuple would have them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def position(index: int, length: int) -> int:
    """`index` as a position in a sequence of `length` items (a negative one counts from the end); IndexError
    outside it, as a tuple raises."""
    found = index + length if index < 0 else index
    if not 0 <= found < length:
        raise IndexError(f"index {index} out of range for {length} items")
    return found


def positions(index: slice, length: int) -> range:
    """The positions a slice of a sequence of `length` items takes, in its order."""
    return range(*index.indices(length))


def equal_items(held: Sequence[Any], other: object) -> bool | Any:
    """`held` == `other` as the tuple of `held`'s items compares with another sequence: item by item; NotImplemented
    for anything that is not a sequence (or is text), so that Python asks `other` in turn."""
    if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
        return len(other) == len(held) and all(a == b for a, b in zip(held, other, strict=True))
    return NotImplemented
