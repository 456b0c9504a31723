"""Both om header versions and both partition tables, as the test's own writer lays them out, read back field by
field; and the refusals: not an om, truncated, padded, encrypted, unknown version."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.ascend_files.errors import OmFileError
from atc_wrap.ascend_files.om_file import read_om_file
from tests.atc_wrap.ascend_writer import om_bytes

PARTITIONS = [(0, b"model-def"), (1, b"w" * 40), (3, b"kernels"), (2, b"tasks")]


def _write(tmp_path: Path, data: bytes, name: str = "m.om") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("version", [0x10000000, 0x20000000])
def test_both_header_versions_read_the_same_fields(tmp_path: Path, version: int) -> None:
    path = _write(tmp_path, om_bytes(PARTITIONS, version=version, name="hh_om", platform_version="1.11.z.0",
                                     om_ir_version=2))
    om = read_om_file(path)
    header = om.header
    assert header.version == version
    assert (header.name, header.platform_version, header.platform_type, header.om_ir_version) == \
        ("hh_om", "1.11.z.0", 1, 2)
    assert header.model_num == (None if version == 0x10000000 else 1)
    assert header.length == om.size - 256
    assert not header.is_encrypted


@pytest.mark.parametrize("wide", [False, True])
def test_partitions_lie_back_to_back_after_the_table(tmp_path: Path, wide: bool) -> None:
    om = read_om_file(_write(tmp_path, om_bytes(PARTITIONS, wide=wide)))
    assert om.header.wide_partition_table is wide
    assert [(p.name, p.size) for p in om.partitions] == [("MODEL_DEF", 9), ("WEIGHTS_DATA", 40),
                                                         ("TBE_KERNELS", 7), ("TASK_INFO", 5)]
    table = (8 + 24 * 4) if wide else (4 + 12 * 4)
    assert om.partitions[0].offset == 256 + table
    assert [om.read(p) for p in om.partitions] == [data for _, data in PARTITIONS]


def test_several_models_each_have_their_table(tmp_path: Path) -> None:
    om = read_om_file(_write(tmp_path, om_bytes([], models=[[(0, b"first")], [(0, b"second"), (2, b"t")]])))
    assert om.header.model_num == 2
    assert [(p.model_index, p.name) for p in om.partitions] == [(0, "MODEL_DEF"), (1, "MODEL_DEF"), (1, "TASK_INFO")]
    second = om.partition(0, model_index=1)
    assert second is not None and om.read(second) == b"second"


def test_an_encrypted_om_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, om_bytes(PARTITIONS, encrypted=True))
    with pytest.raises(OmFileError, match=r"m\.om: the om is encrypted \(is_encrypt = 1") as caught:
        read_om_file(path)
    assert "\n" not in str(caught.value)


def test_a_file_that_is_not_an_om_names_the_magic_it_found(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\x7fELF" + bytes(300), "model.pb")
    with pytest.raises(OmFileError, match=r"model\.pb: not an om file: expected the magic b'IMOD' \(0x444F4D49\) "
                                          r"at byte 0, found b'\\x7fELF' \(0x464C457F\)"):
        read_om_file(path)


def test_an_empty_file_is_not_an_om(tmp_path: Path) -> None:
    with pytest.raises(OmFileError, match=r"not an om file: .* found 0 bytes"):
        read_om_file(_write(tmp_path, b""))


def test_a_short_header_is_truncated(tmp_path: Path) -> None:
    with pytest.raises(OmFileError, match="truncated om: expected its 256-byte header, the file has 100 bytes"):
        read_om_file(_write(tmp_path, om_bytes(PARTITIONS)[:100]))


def test_a_cut_body_is_truncated_with_both_sizes(tmp_path: Path) -> None:
    data = om_bytes(PARTITIONS)
    with pytest.raises(OmFileError, match=f"truncated om: its header declares {len(data) - 256} bytes after the "
                                          f"256-byte header \\({len(data)} in all\\), the file has {len(data) - 3}"):
        read_om_file(_write(tmp_path, data[:-3]))


def test_bytes_after_the_declared_length_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OmFileError, match=r"not a whole om: .* the file has"):
        read_om_file(_write(tmp_path, om_bytes(PARTITIONS) + b"extra"))


def test_an_unknown_header_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OmFileError, match="unknown om header version 0x30000000: expected 0x10000000 or 0x20000000"):
        read_om_file(_write(tmp_path, om_bytes(PARTITIONS, version=0x30000000)))


def test_a_folder_is_refused_as_an_om_error(tmp_path: Path) -> None:
    with pytest.raises(OmFileError, match="cannot read the om"):
        read_om_file(tmp_path)
