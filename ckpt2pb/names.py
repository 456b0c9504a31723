"""Looking names up in a graph, and saying which names were meant when one is wrong."""

from __future__ import annotations

from collections.abc import Iterable

from binio.errors import excerpt
from binio.texts import MAX_SUGGESTED, close_matches
from ckpt2pb.errors import GraphNameError


def closest(name: str, known: Iterable[str], *, count: int = 3) -> list[str]:
    """The known names nearest to `name`: difflib's ratio on the whole name, then on the last scope part."""
    pool = sorted(set(known))
    found = close_matches(name, pool, count=count, cutoff=0.5)
    if len(found) < count and len(name) <= MAX_SUGGESTED:
        tail = name.rsplit("/", 1)[-1].lower()
        by_tail = [k for k in pool if tail and tail in k.lower() and k not in found]
        found += by_tail[: count - len(found)]
    return found


def unknown_name_error(what: str, name: str, known: Iterable[str]) -> GraphNameError:
    """`output 'prob:0' is not in the graph; closest: probs:0, ...`."""
    suggestions = closest(name, known)
    tail = f"; closest: {', '.join(suggestions)}" if suggestions else ""
    return GraphNameError(f"{what} {excerpt(name)} is not in the graph{tail}",
                          hint="infer inspect MODEL lists the inputs and the likely outputs")
