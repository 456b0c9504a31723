"""binio.reading: a user's file read as text or JSON, each way it can be hostile refused by name; what a reader
leaves unrefused marked with its file for the command line's one catch."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binio.errors import InferError
from binio.reading import MAX_DEPTH, check_depth, parse_json, read_failure, read_text_file, reading
from tests.hostile import DEEP_JSON, HUGE_DIGITS, nested


class NoteError(InferError):
    """The caller's own error class, which every refusal is raised as."""


def _text(path: Path) -> str:
    return read_text_file(path, what="a note", error=NoteError)


def test_text_that_is_utf8_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "note").write_text("caf\u00e9\n\u4e2d\n", encoding="utf-8")
    assert _text(tmp_path / "note") == "caf\u00e9\n\u4e2d\n"


def test_a_byte_that_is_not_utf8_is_named_by_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "note").write_bytes(b"first\nab\xffc\n")
    with pytest.raises(NoteError) as refused:
        _text(tmp_path / "note")
    assert refused.value.message == (f"{tmp_path / 'note'}: line 2, column 3: byte 0xff is not UTF-8; expected a "
                                     "note as UTF-8 text")


def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(InferError, match=r"pipe: a FIFO \(named pipe\), not a regular file; expected a note"):
        _text(tmp_path / "pipe")  # opening it would wait for a writer forever


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: None, "no such file (expected a note)"),
    (lambda p: p.mkdir(), "a folder, where a note is expected"),
])
def test_a_missing_file_and_a_folder(tmp_path: Path, make: object, said: str) -> None:
    path = tmp_path / "note"
    make(path)  # type: ignore[operator]
    with pytest.raises(NoteError) as refused:
        _text(path)
    assert refused.value.message == f"{path}: {said}"


@pytest.mark.parametrize(("text", "said"), [
    (DEEP_JSON, "nested more than 64 levels deep; not a note"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested more than 64 levels deep; not a note"),
    (HUGE_DIGITS, "not a note (Exceeds the limit (4300 digits) for integer string conversion: value has 5000 "
                  "digits; use sys.set_int_max_str_digits() to increase the limit)"),
    ('{"a": }', "not valid JSON (line 1, column 7: Expecting value)"),
])
def test_json_that_python_cannot_decode_is_refused_by_name(text: str, said: str) -> None:
    with pytest.raises(NoteError) as refused:
        parse_json(text, named="note.json", what="a note", error=NoteError)
    assert refused.value.message == f"note.json: {said}"


def test_nesting_up_to_the_bound_is_read() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_json(text, named="n", what="a note") == json.loads(text)
    check_depth(nested(MAX_DEPTH), named="n", what="a note")  # 64 lists around a number
    with pytest.raises(InferError):
        check_depth(nested(MAX_DEPTH + 1), named="n", what="a note")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_are_a_value_or_one_refusal_naming_the_file(data: bytes) -> None:
    try:
        parse_json(data.decode("utf-8", "replace"), named="note.json", what="a note", error=NoteError)
    except NoteError as refusal:
        assert refusal.message.startswith("note.json: ") and "\n" not in refusal.message


def test_what_a_reader_leaves_unrefused_names_its_file() -> None:
    with pytest.raises(ValueError) as raised, reading(Path("labels.txt")):
        int("x" * 3)
    failure = read_failure(raised.value)
    assert failure is not None
    assert failure.message == ("labels.txt: cannot be read: unexpected content (ValueError: invalid literal for int() "
                               "with base 10: 'xxx')")


def test_the_innermost_file_is_named() -> None:
    with pytest.raises(RecursionError) as raised, reading(Path("outer.json")), reading(Path("inner.json")):
        raise RecursionError("deep")
    failure = read_failure(raised.value)
    assert failure is not None and failure.message == "inner.json: cannot be read: nested too deeply"


def test_an_os_error_with_its_file_is_one_line_and_a_bare_one_is_not_taken() -> None:
    named = read_failure(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/data/out.bin"))
    assert named is not None and named.message == "/data/out.bin: No space left on device"
    assert read_failure(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))) is None
    assert read_failure(ValueError("a bug")) is None  # outside any reading(): a bug, with its traceback


# --- size limits: a reader refuses what it cannot hold before it reads it whole ---------------------------------------

@settings(max_examples=200, deadline=None)
@given(content=st.one_of(st.binary(max_size=300), st.text(max_size=200).map(str.encode)),
       limit=st.integers(min_value=0, max_value=400))
def test_a_text_is_read_only_within_its_limit_and_free_of_nul(tmp_path_factory: pytest.TempPathFactory,
                                                              content: bytes, limit: int) -> None:
    path = tmp_path_factory.mktemp("bounded") / "note"
    path.write_bytes(content)
    try:
        text = read_text_file(path, what="a note", error=NoteError, limit=limit)
    except NoteError as refusal:
        assert refusal.message.startswith(f"{path}: ") and "\n" not in refusal.message
        assert len(content) > limit or b"\0" in content[:4096] or not _utf8(content)
        return
    assert len(content) <= limit and b"\0" not in content and text == content.decode("utf-8")


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_a_sparse_gigabyte_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "note"
    with open(path, "wb") as handle:
        handle.truncate(2**30)
    with pytest.raises(NoteError) as refused:
        read_text_file(path, what="a note", error=NoteError, limit=1 << 20)
    assert refused.value.message == f"{path}: {2**30:,} bytes, more than a note holds (at most {1 << 20:,})"
