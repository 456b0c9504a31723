"""A JSON document parsed from its text in pieces, never holding the whole text: `json.loads`'s value, or
`NotStreamed` where the text is anything but a valid document (the caller then reads it whole, for the error
`json.loads` gives).

A dataset.json of 50,000 batches is 7.5 MB of text; read whole it was the largest thing run and compare held
(issue 42). Here the text is held a piece at a time (256 KiB): containers the piece does not hold whole are walked
here, member by member; every value that fits is parsed by the json module's own scanner, and any whose end is the
piece's end is read again with the next piece, so a number or a string is never cut. Objects are given to
`object_hook` as `json.loads` gives them: each once it is complete, inner ones first, in document order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

PIECE = 1 << 18  # characters of text read at once (256 Ki), beside what one value that spans pieces needs

_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")  # what may still belong to a number the scanner read
_AFTER_ITEM = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")  # what follows an array's item: a comma or its end
# parses one value at an offset: (value, end); the decoder's own, as json.loads uses it
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__


class NotStreamed(Exception):
    """The text is not one JSON value (or nests deeper than Python's stack): read it whole for `json.loads`'s
    own error."""


def parse_pieces(pieces: Iterable[str], object_hook: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """The JSON value the concatenated `pieces` hold, as ``json.loads(text, object_hook=object_hook)`` returns it;
    NotStreamed where that would raise (or where the value nests too deep to walk here)."""
    text = _Text(iter(pieces))
    try:
        value = _Parser(text, object_hook).value(whole=False)
        if text.next_char() != "":
            raise NotStreamed("data after the value")
    except RecursionError:
        raise NotStreamed("nested too deep") from None
    return value


class _Text:
    """The unread part of the text: the piece being read, from `at` on."""

    def __init__(self, pieces: Iterator[str]) -> None:
        self._pieces = pieces
        self.held = ""
        self.at = 0

    def more(self) -> bool:
        """Holds the next piece after what is unread; False at the end of the text."""
        for piece in self._pieces:
            if piece:
                self.held = self.held[self.at:] + piece
                self.at = 0
                return True
        return False

    def next_char(self) -> str:
        """The next character past white space, not consumed; "" at the end of the text."""
        while True:
            self.at = _SPACE.match(self.held, self.at).end()  # type: ignore[union-attr]  # it matches ""
            if self.at < len(self.held):
                return self.held[self.at]
            if not self.more():
                return ""

    def expect(self, char: str) -> None:
        if self.next_char() != char:
            raise NotStreamed(f"expected {char!r}")
        self.at += 1


class _Parser:

    def __init__(self, text: _Text, object_hook: Callable[[dict[str, Any]], Any] | None) -> None:
        self.text = text
        self.hook = object_hook

    def value(self, whole: bool = True) -> Any:
        """The next value. `whole`: a container is first tried as one value by the scanner (an array's items,
        small and many); else it is walked here at once (a member's value: the document's lists of 50,000 files,
        which a try would parse a piece's worth of only to throw it away)."""
        text = self.text
        held, at = text.held, text.at
        first = held[at] if at < len(held) and held[at] not in " \t\n\r" else text.next_char()
        if first == "":
            raise NotStreamed("no value")
        if not whole and first in "{[":
            return self.container(first)
        while True:
            try:
                found, end = _SCAN(text.held, text.at)
            except (StopIteration, ValueError):  # JSONDecodeError, or an integer of too many digits
                if first in "{[":
                    return self.container(first)  # larger than the piece (or broken: found inside)
                if text.more():
                    continue
                raise NotStreamed("not a value") from None
            # A container's closing bracket ends it, a string's quote; a number or a literal may go on in the next
            # piece (12|34, 5.|25, 1e|5, nu|ll): it is read again with that piece unless something else follows it.
            tail = _NUMBER_TAIL.match(text.held, end)
            if first in "{[\"" or (tail is not None and tail.end() < len(text.held)) or not text.more():
                text.at = end
                return self.hooked(found)

    def container(self, opening: str) -> Any:
        text = self.text
        text.at += 1
        if opening == "[":
            items: list[Any] = []
            if text.next_char() == "]":
                text.at += 1
                return items
            while True:
                items.append(self.value())
                after = _AFTER_ITEM.match(text.held, text.at)
                if after is not None and after.end() < len(text.held):  # the next item starts in this piece
                    text.at = after.end()
                    if after.group(1) == "]":
                        return items
                    continue
                if text.next_char() == "]":
                    text.at += 1
                    return items
                text.expect(",")
        members: dict[str, Any] = {}
        if text.next_char() == "}":
            text.at += 1
            return self.hook(members) if self.hook is not None else members
        while True:
            if text.next_char() != '"':
                raise NotStreamed("expected a key")
            key = self.value()
            text.expect(":")
            members[key] = self.value(whole=False)
            if text.next_char() == "}":
                text.at += 1
                return self.hook(members) if self.hook is not None else members
            text.expect(",")

    def hooked(self, value: Any) -> Any:
        """`value` as the scanner made it, its objects given to the hook as json.loads gives them: inner first."""
        if self.hook is None:
            return value
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, (dict, list)):
                    value[key] = self.hooked(item)
            return self.hook(value)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, (dict, list)):
                    value[index] = self.hooked(item)
        return value
