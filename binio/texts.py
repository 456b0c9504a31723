"""What users type for a list or a pair (``1,2,4``, ``123.7,116.3,103.5``, ``256,256``, ``a[1,2],b``), read into values
with one-line refusals that name the flag: standard library only, so the options that use them import no numpy."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from binio.errors import InferError

# The longest word a "did you mean" suggestion looks at: difflib's matching is quadratic in the word's length, and a
# name read from a hostile file can be a gigabyte of NUL bytes; no op, key or tensor name is this long.
MAX_SUGGESTED = 256


def close_matches(word: str, choices: Iterable[str], *, count: int = 1, cutoff: float = 0.6) -> list[str]:
    """difflib's closest `choices` to `word`, or none when `word` (or a choice) is longer than `MAX_SUGGESTED`:
    the bound on what a suggestion costs, whatever a file holds."""
    if len(word) > MAX_SUGGESTED:
        return []
    import difflib  # on use: the options import this module, and a suggestion is made only for a refusal

    return difflib.get_close_matches(word, [c for c in choices if len(c) <= MAX_SUGGESTED], n=count, cutoff=cutoff)


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
