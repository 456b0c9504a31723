"""Typed reading of the JSON documents infer leaves (dataset.json, run.json, model.json), which a user can edit or
receive from someone else: every value is checked for its type before use, and every name that becomes a path is
checked to stay inside the folder it belongs to. A refusal is one line naming the file, the entry and the value.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from binio.errors import InferError

_MISSING: Any = object()
_SHOWN = 60  # characters of a refused value shown in the message
# The largest whole number a document may hold: a size, a count or a dim past 64 bits fits no numpy integer, and
# would fail later (OverflowError) instead of here.
LARGEST_INTEGER = 2**63 - 1


def kind(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def shown(value: Any) -> str:
    """A value as it appears in a message: quoted, and cut short when long (a hostile name can be huge)."""
    text = repr(value) if isinstance(value, str) else f"{kind(value)} {value!r}"
    return _cut(text)


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


class Fields:
    """One JSON object of a document: `entry` says where it sits (``inputs[0]``), `path` which file it is."""

    def __init__(self, data: Any, *, path: Path, entry: str, error: type[InferError]) -> None:
        self.path, self.entry, self.error = path, entry, error
        if not isinstance(data, dict):
            raise error(f"{path}: {entry or 'the document'}: expected an object, found {shown(data)}")
        self.data: dict[str, Any] = data

    def where(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.entry}[{key}]"
        return f"{self.entry}.{key}" if self.entry else key

    def refuse(self, key: str | int, message: str) -> InferError:
        return self.error(f"{self.path}: {self.where(key)}: {message}")

    def _get(self, key: str, default: Any) -> Any:
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise self.error(f"{self.path}: missing field '{self.where(key)}'")
        return default

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def text(self, key: str, default: Any = _MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self.refuse(key, f"expected a string, found {shown(value)}")
        return value

    def word(self, key: str, words: tuple[str, ...], default: Any = _MISSING) -> str:
        """A text that must be one of `words` (a closed vocabulary: `binio.vocabulary`); the caller casts it to its
        Literal type."""
        value = self.text(key, default)
        if value not in words:
            raise self.refuse(key, f"expected one of {', '.join(words)}, found {shown(value)}")
        return value

    def integer(self, key: str, default: Any = _MISSING, *, minimum: int | None = None) -> int:
        return self.check_integer(key, self._get(key, default), minimum=minimum)

    def check_integer(self, key: str | int, value: Any, *, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.refuse(key, f"expected a whole number, found {shown(value)}")
        if minimum is not None and value < minimum:
            raise self.refuse(key, f"expected {minimum} or more, found {_cut(str(value))}")
        if not -LARGEST_INTEGER - 1 <= value <= LARGEST_INTEGER:
            raise self.refuse(key, f"expected a whole number of 64 bits at most, found {_cut(str(value))}")
        return value

    def number(self, key: str, default: Any = _MISSING) -> float | None:
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.refuse(key, f"expected a number, found {shown(value)}")
        return float(value)

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.refuse(key, f"expected true or false, found {shown(value)}")
        return value

    def values(self, key: str, default: Any = _MISSING) -> list[Any]:
        value = self._get(key, default)
        if not isinstance(value, list):
            raise self.refuse(key, f"expected a list, found {shown(value)}")
        return value

    def texts(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        items = self.values(key, default)
        for index, item in enumerate(items):
            if not isinstance(item, str):
                raise self.error(f"{self.path}: {self.where(key)}[{index}]: expected a string, found {shown(item)}")
        return tuple(items)

    def mapping(self, key: str, default: Any = _MISSING) -> dict[str, Any]:
        value = self._get(key, default)
        if not isinstance(value, dict):
            raise self.refuse(key, f"expected an object, found {shown(value)}")
        return value

    def child(self, key: str, default: Any = _MISSING) -> Fields:
        return Fields(self.mapping(key, default), path=self.path, entry=self.where(key), error=self.error)

    def children(self, key: str, default: Any = _MISSING) -> Iterator[Fields]:
        for index, item in enumerate(self.values(key, default)):
            yield Fields(item, path=self.path, entry=f"{self.where(key)}[{index}]", error=self.error)

    def name(self, key: str, folder: Path, default: Any = _MISSING, *, follow_links: bool = True) -> str:
        """A bare file or folder name (no separator, no ``..``) whose path stays in `folder`, links followed
        unless not `follow_links`."""
        value = self.text(key, default)
        check_inside(value, folder, bare=True, path=self.path, entry=self.where(key), error=self.error,
                     follow_links=follow_links)
        return value

    def relative(self, key: str, folder: Path, default: Any = _MISSING) -> str:
        """A relative path (separators allowed, no ``..``) whose target, links followed, stays in `folder`."""
        value = self.text(key, default)
        check_inside(value, folder, bare=False, path=self.path, entry=self.where(key), error=self.error)
        return value


def check_inside(value: str, folder: Path, *, bare: bool, path: Path, entry: str, error: type[InferError],
                 follow_links: bool = True) -> None:
    """Refuses a value that would leave `folder` as ``folder / value``: absolute, with ``..``, with a separator where
    a bare name is meant, or (with `follow_links`) through a link that points out of it. A name not followed
    through links is checked as text alone (a manifest lists tens of thousands)."""
    reason = why_outside(value, bare)
    if reason is None and follow_links:
        target = Path(folder) / value
        try:
            inside = target.resolve().is_relative_to(Path(folder).resolve())
        except (OSError, RuntimeError):  # a link loop
            inside = False
        if not inside:
            reason = f"resolves to {target.resolve(strict=False)}, outside {folder}"
    if reason is not None:
        raise error(f"{path}: {entry} {shown(value)}: {reason}",
                    hint=f"names in {path.name} must stay inside {folder}; fix or regenerate the file")


def why_outside(value: str, bare: bool) -> str | None:
    if not value:
        return "empty"
    if "\0" in value:
        return "holds a NUL character"
    if os.path.isabs(value) or value.startswith(("/", "\\")):
        return "an absolute path, where a name inside the folder is meant"
    parts = value.replace("\\", "/").split("/")
    if ".." in parts:
        return "'..' leaves the folder"
    if bare and (len(parts) > 1 or value in (".",)):
        return "a path, where a bare name is meant"
    return None
