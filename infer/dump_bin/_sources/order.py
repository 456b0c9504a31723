"""The order samples are read in from a folder of files: natural, numbers in names compared as numbers.

``img_2.png`` before ``img_10.png`` and ``2.bin`` before ``10.bin``, as ais_bench reads bins and as people number
their files: a plain sort would put sample 10 before sample 2, and pair it with sample 2's label.
"""

from __future__ import annotations

import re
from pathlib import Path

NATURAL_ORDER = "natural (numbers in names compared as numbers)"


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``img_2.png`` before ``img_10.png``: the numbers in a name compared as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part)


def natural_order(path: Path) -> tuple[tuple[int, int | str], ...]:
    """A file by its name, in natural order."""
    return natural_key(path.name)
