"""The order samples are read in from a folder of files: natural, numbers in names compared as numbers.

``img_2.png`` before ``img_10.png`` and ``2.bin`` before ``10.bin``, as ais_bench reads bins and as people number
their files: a plain sort would put sample 10 before sample 2, and pair it with sample 2's label.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

NATURAL_ORDER = "natural (numbers in names compared as numbers)"


_NUMBERS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``img_2.png`` before ``img_10.png``: the numbers in a name compared as numbers."""
    # re.split with a group puts the numbers at the odd places; isdigit() would also take a "²", which int() refuses
    return tuple((0, int(part)) if odd else (1, part)
                 for odd, part in ((i % 2, p) for i, p in enumerate(_NUMBERS.split(name))) if part)


def natural_path_key(relative: str, shared: dict[str, str] | None = None) -> tuple[int | str, ...]:
    """The natural order of a relative path (``a/img_2.png``), part by part: it orders paths exactly as the tuple of
    their parts' `natural_key`s does, flattened into one tuple, a third of the memory (a folder of 50,000 images is
    sorted by it, every key held at once). Equal text is one string where `shared` (one dict for one sort, not
    the interpreter's table of interned names, which only grows) is given: ``.png`` once, not 50,000 times."""
    key: list[int | str] = []
    for number, part in enumerate(relative.split("/")):
        if number:
            key.append(-1)  # a part ends: below any flag, as the shorter of two tuples sorts first
        for flag, value in natural_key(part):
            key += (flag, shared.setdefault(value, value) if shared is not None and isinstance(value, str) else value)
    return tuple(key)


# The markers of `natural_text_key`, below every character a name it is used for holds
_PART_END, _NUMBER, _TEXT = "\x00", "\x01", "\x02"
_NUMBER_DIGITS = 6  # the width of a number's digit count: int() refuses numbers of more than 4,300 digits anyway


def orders_as_text(names: Iterable[str]) -> bool:
    """Whether `natural_text_key` orders these names as `natural_path_key` does: none holds a character its
    markers could be confused with (U+0000-U+0002, never in a file name made by hand)."""
    return all(not name or min(name) > _TEXT for name in names)


def natural_text_key(relative: str) -> str:
    """`natural_path_key` as one string that sorts the same among names `orders_as_text` accepts: a part's end
    below a number below a text, a number as its digit count then its digits. A string of some 20 characters
    where the tuple was 4 objects: a folder of 50,000 images is sorted by it, every key held at once (issue 42)."""
    pieces: list[str] = []
    for number, part in enumerate(relative.split("/")):
        if number:
            pieces.append(_PART_END)
        for flag, value in natural_key(part):
            if flag == 0:
                digits = str(value)
                pieces.append(f"{_NUMBER}{len(digits):0{_NUMBER_DIGITS}d}{digits}")
            else:
                pieces.append(f"{_TEXT}{value}")
    return "".join(pieces)


# Between a name's `natural_text_key` and the name: below whatever a key goes on with (a marker; after a part's
# end, a number's or a text's), and never in a key itself, whose texts hold no marker
_NAME_FOLLOWS = "\x00\x00"


def natural_sort_text(relative: str) -> str:
    """`natural_text_key` with the name after it, for names `orders_as_text` accepts. Sorted alone, these strings
    give the names in natural order, those equal in it (``img_1.png``, ``img_01.png``) by their text, on every
    file system; and each name is read back from its string (`named_by`): a folder's names are not held beside
    their keys while it is sorted (issue 42: 50,000 of each)."""
    return natural_text_key(relative) + _NAME_FOLLOWS + relative


def named_by(sort_text: str) -> str:
    """The name `natural_sort_text` made `sort_text` of."""
    return sort_text[sort_text.index(_NAME_FOLLOWS) + len(_NAME_FOLLOWS):]


def natural_order(path: Path) -> tuple[tuple[int, int | str], ...]:
    """A file by its name, in natural order."""
    return natural_key(path.name)
