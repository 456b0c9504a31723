"""What users type for a list or a pair (``1,2,4``, ``123.7,116.3,103.5``, ``256,256``, ``a[1,2],b``), read into values
with one-line refusals that name the flag: standard library only, so the options that use them import no numpy."""

from __future__ import annotations

from collections.abc import Callable

from binio.errors import InferError


def split_top_level(text: str) -> list[str]:
    """Splits on commas that are not inside brackets: ``a[1,2],b`` -> ``a[1,2]``, ``b``."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def floats(text: str, flag: str) -> tuple[float, ...]:
    """``123.7,116.3,103.5`` -> (123.7, 116.3, 103.5)."""
    try:
        return tuple(float(v) for v in text.replace(" ", "").split(","))
    except ValueError:
        raise InferError(f"{flag} {text}: expected numbers separated by commas (e.g. 123.7,116.3,103.5)") from None


def whole_pair(example: str) -> Callable[[str, str], tuple[int, int]]:
    """A reader of ``W,H`` or ``X,Y`` as two non-negative integers, its refusal showing `example`."""

    def read(text: str, flag: str) -> tuple[int, int]:
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise InferError(f"{flag} {text}: expected two whole numbers, e.g. {example}")
        return int(parts[0]), int(parts[1])

    return read


def top_level_items(text: str, flag: str) -> tuple[str, ...]:
    """``a[1,2]:float32,b`` -> ("a[1,2]:float32", "b"): the items of a list whose items hold commas in brackets."""
    return tuple(split_top_level(text))


def comma_items(text: str, flag: str) -> tuple[str, ...]:
    """``probs:0,logits`` -> ("probs:0", "logits")."""
    return tuple(part.strip() for part in text.split(",") if part.strip())
