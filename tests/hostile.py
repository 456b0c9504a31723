"""What a file infer did not write may hold, for the property tests of every reader: a valid document with one
value replaced, one field removed or one added, or bytes that are no document at all (not UTF-8, nested a hundred
thousand deep, numbers of thousands of digits).

The property each reader is held to is the same: one ``error:`` line naming the file (exit code 2), or a result;
never a traceback. `refused_or_read` checks it on a command's outcome.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.cli import Outcome

DEEP_JSON = "[" * 100_000 + "]" * 100_000
HUGE_DIGITS = "9" * 5000  # more digits than Python turns into an int (4300)


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


# One value, of any kind JSON has, at its edges: past 64 bits, NaN and inf, nested past any document's depth,
# names that leave their folder, empty and huge texts.
VALUES: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63, 2**64 + 1, -(2**63) - 1, 10**20, 10**300, -1, 0, 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "../../victim", "/etc/passwd", "x\x00y", "big", "NCHW", "float16", "é",
                     "a" * 10_000]),
    st.text(max_size=8),
    st.lists(st.integers(min_value=-3, max_value=10**12), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([nested(70), nested(10)]),
)


def locations(document: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a decoded document: () for the whole, then each key and index, depth first."""
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from locations(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from locations(value, (*prefix, index))


def _at(document: Any, where: tuple[Any, ...]) -> Any:
    for key in where:
        document = document[key]
    return document


def mutated(document: dict[str, Any], data: st.DataObject) -> bytes:
    """The bytes of `document` with one hostile change drawn from `data`: a value replaced, a field removed or
    added, or the text damaged (a byte that is not UTF-8, a number of thousands of digits, nesting a hundred
    thousand deep, random bytes)."""
    kind = data.draw(st.sampled_from(["replace", "replace", "replace", "remove", "add", "damage"]))
    changed = copy.deepcopy(document)
    places = list(locations(changed))
    if kind == "damage":
        text = json.dumps(changed)
        damage = data.draw(st.sampled_from(["byte", "digits", "deep", "random", "cut"]))
        at = data.draw(st.integers(min_value=0, max_value=len(text)))
        if damage == "byte":
            return text[:at].encode() + data.draw(st.sampled_from([b"\xff", b"\xc3", b"\x80"])) + text[at:].encode()
        if damage == "digits":
            return text.replace("1", HUGE_DIGITS, 1).encode() if "1" in text else HUGE_DIGITS.encode()
        if damage == "deep":
            return DEEP_JSON.encode()
        if damage == "cut":
            return text[:at].encode()
        return data.draw(st.binary(max_size=64))
    if kind == "replace":
        where = data.draw(st.sampled_from(places))
        value = data.draw(VALUES)
        if not where:
            changed = value
        else:
            _at(changed, where[:-1])[where[-1]] = value
    elif kind == "remove":
        keyed = [where for where in places if where and isinstance(_at(changed, where[:-1]), dict)]
        if keyed:
            where = data.draw(st.sampled_from(keyed))
            del _at(changed, where[:-1])[where[-1]]
    else:
        objects = [where for where in places if isinstance(_at(changed, where), dict)]
        where = data.draw(st.sampled_from(objects))
        _at(changed, where)[data.draw(st.text(min_size=1, max_size=6))] = data.draw(VALUES)
    return json.dumps(changed).encode()


def refused_or_read(outcome: Outcome, *named: Path | str) -> bool:
    """Whether `outcome` is a result (exit 0), or one ``error:`` line naming one of `named` (a file, or the folder
    the file belongs to) with exit code 2; never a traceback. Returns whether it was refused."""
    assert "Traceback" not in outcome.err, outcome.err
    if outcome.code == 0:
        return False
    assert outcome.code == 2, outcome.err
    line = outcome.error_line
    assert any(str(name) in line for name in named), line
    return True


def refusal_names(message: str, *named: Path | str) -> bool:
    """Whether a refusal's message is one line naming one of `named`."""
    return "\n" not in message and any(str(name) in message for name in named)


@contextlib.contextmanager
def fifo_at(path: Path) -> Iterator[Path]:
    """A FIFO at `path` with a writer that closes at once: a reader that opens it (the old behaviour) reads an
    empty file instead of waiting forever, so the test fails rather than hangs. The writer is let go at the end."""
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)), daemon=True)
    writer.start()
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))  # lets a writer nobody read from finish
        writer.join(timeout=10)
