"""`FileStems` and `StemList` behave as the tuple and the list of the same strings, whatever the stems (dump-bin's,
held as a range, or any others)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binio.bin_entry import bin_file_stem
from binio.file_stems import FileStems, StemList

# dump-bin's stems, near-misses of them (another width, a sign, a non-ASCII digit) and other names
_STEM = st.one_of(st.integers(0, 40).map(bin_file_stem), st.sampled_from(["7", "0000007", "+00007", "٣٣٣٣٣٣", "a", ""]))
_STEMS = st.one_of(st.lists(_STEM, max_size=12), st.tuples(st.integers(0, 30), st.integers(0, 12)).map(
    lambda span: [bin_file_stem(k) for k in range(span[0], span[0] + span[1])]))


@given(_STEMS, _STEM)
def test_file_stems_answer_as_the_tuple_of_the_same_stems(stems: list[str], probe: str) -> None:
    held, plain = FileStems(stems), tuple(stems)
    assert held == plain and plain == held and list(held) == stems and len(held) == len(plain)
    assert hash(held) == hash(plain)
    assert (probe in held) == (probe in plain)
    assert held.repeats() == (len(set(stems)) != len(stems))
    if probe in plain and not held.repeats():
        assert held.place(probe) == plain.index(probe) == held.index(probe)
    else:
        assert probe in plain or held.place(probe) is None
    for cut in (slice(1, None), slice(None, -1), slice(2, 5), slice(None, None, 2), slice(None, None, -1)):
        assert held[cut] == plain[cut] and isinstance(held[cut], FileStems)
    for k in range(-len(stems), len(stems)):
        assert held[k] == plain[k]
    with pytest.raises(IndexError):
        held[len(stems)]


@given(_STEMS)
def test_a_stem_list_holds_what_was_appended_in_order(stems: list[str]) -> None:
    built = StemList()
    for k, stem in enumerate(stems):
        built.append(stem)
        assert len(built) == k + 1 and built[k] == stem
    assert built == stems and list(built) == stems and built.frozen() == FileStems(stems)


def test_dump_bins_stems_are_held_as_a_range_and_others_as_given() -> None:
    run = [bin_file_stem(k) for k in range(3, 50_003)]
    assert FileStems(run).numbers == range(3, 50_003)  # held as a range, not 50,000 strings
    built = StemList()
    built.extend(run)
    assert built.frozen().numbers == range(3, 50_003)
    assert FileStems(["000001", "000000"]).numbers is None  # out of order: as given
    assert FileStems(range(0, 10, 2)) == ("000000", "000002", "000004", "000006", "000008")
