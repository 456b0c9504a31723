"""Input names become folder names that stay inside the dataset folder, whatever the tensor is called."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binio.manifest import bin_file_name, safe_folder_name


def test_folder_names_of_typical_tensors() -> None:
    assert [safe_folder_name(t) for t in ("images:0", "bert/input_ids:0", "IteratorGetNext:1", "../../etc:0",
                                          "..", "a b:c")] == ["images", "bert_input_ids", "IteratorGetNext",
                                                              "_.._etc", "input", "a_b_c"]


@pytest.mark.slow
@given(st.text(min_size=0, max_size=40))
def test_a_folder_name_is_never_a_path_nor_a_dot_name(tensor: str) -> None:
    folder = safe_folder_name(tensor)
    assert folder and "/" not in folder and "\\" not in folder and "\0" not in folder
    assert not folder.startswith(".")  # neither . nor .. nor a hidden folder


def test_file_names_sort_in_batch_order() -> None:
    names = [bin_file_name(i) for i in (0, 9, 10, 99, 100, 123456)]
    assert names[0] == "000000.bin" and names == sorted(names)
