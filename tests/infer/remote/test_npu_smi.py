"""`npu-smi info` read as data, on the published outputs tests/fakes/npu_smi/ holds (SOURCES.md names each), and the
chip a conversion on a host is for."""

from __future__ import annotations

from pathlib import Path

import pytest

from infer.remote import RemoteError
from infer.remote._chip import host_soc_version
from infer.remote.npu_smi import NpuSmiFormatError, NpuSmiInfo, parse_npu_smi_info

SAMPLES = Path(__file__).resolve().parents[2] / "fakes" / "npu_smi"


def _read(name: str) -> NpuSmiInfo:
    return parse_npu_smi_info((SAMPLES / name).read_text())


def test_every_sample_is_documented_and_read() -> None:
    sources = (SAMPLES / "SOURCES.md").read_text()
    names = sorted(path.name for path in SAMPLES.glob("*.txt"))
    assert len(names) >= 6
    for name in names:
        assert f"`{name}`" in sources, f"{name} has no source in SOURCES.md"
        assert _read(name).chips, name


@pytest.mark.parametrize(("name", "version", "chips"), [
    # the Atlas 300I's four 310s: one NPU number, chips 0 to 3, and their device ids
    ("310_20.2.0.txt", "20.2.0", [(215, 0, 0, "310"), (215, 1, 1, "310"), (215, 2, 2, "310"), (215, 3, 3, "310")]),
    # the device id (what --device takes) is not the chip number: 3 to 6 here
    ("310_21.0.4.txt", "21.0.4.B030", [(6, 0, 3, "310"), (6, 1, 4, "310"), (6, 2, 5, "310"), (6, 3, 6, "310")]),
    ("310P3_2cards.txt", "", [(0, 0, 0, "310P3"), (1, 0, 1, "310P3")]),
    ("310B1_23.0.rc3.txt", "23.0.rc3", [(0, 0, 0, "310B1")]),
    # a training server's table has no Device column: the NPU number is the device
    ("910A_22.0.3.1.txt", "22.0.3.1", [(n, 0, n, "910A") for n in range(8)]),
    # the process table after the chips is not read as chips
    ("910_24.1.RC2_processes.txt", "24.1.RC2", [(n, 0, n, "xxx") for n in range(4)]),
])
def test_each_format_gives_its_chips(name: str, version: str, chips: list[tuple[int, int, int, str]]) -> None:
    info = _read(name)
    assert info.version == version
    assert [(c.npu, c.chip, c.device, c.name) for c in info.chips] == chips


def test_health_and_atcs_spelling_of_the_chip() -> None:
    info = _read("910_24.1.RC2_processes.txt")
    assert [c.health for c in info.chips] == ["OK", "OK", "OK", "Warning"]
    assert info.soc_versions == ()  # "xxx" (the document's placeholder) is no chip ATC knows
    assert _read("310P3_2cards.txt").soc_versions == ("Ascend310P3",)
    assert _read("910A_22.0.3.1.txt").soc_versions == ("Ascend910A",)
    assert _read("310_21.0.4.txt").describe() == "310 on devices 3, 4, 5, 6"


@pytest.mark.parametrize("text", ["", "Usage: npu-smi info ...", "dcmi model initialized failed, because the device "
                                  "is used. ret is -8020\n"])
def test_what_is_no_table_is_refused(text: str) -> None:
    with pytest.raises(NpuSmiFormatError):
        parse_npu_smi_info(text)


def test_the_hosts_chip_is_the_default_soc_version() -> None:
    info = _read("310P3_2cards.txt")
    soc, said = host_soc_version("ascend01", info, "", "")
    assert soc == "Ascend310P3"
    assert said == "ascend01: --soc-version Ascend310P3, the chip npu-smi info reports there (310P3 on devices 0, 1)"
    assert host_soc_version("ascend01", info, "", "Ascend310P3")[0] == "Ascend310P3"


def test_a_chip_the_host_does_not_have_is_refused() -> None:
    with pytest.raises(RemoteError, match=r"^ascend01: --soc-version Ascend310: the host's NPUs are 310P3 on devices "
                                          r"0, 1 \(npu-smi info\); an om built for another chip does not load there"):
        host_soc_version("ascend01", _read("310P3_2cards.txt"), "", "Ascend310")


def test_without_npu_smi_the_soc_version_must_be_given() -> None:
    with pytest.raises(RemoteError, match=r"^build: --soc-version: npu-smi is not on the host, so the host's chip"):
        host_soc_version("build", None, "", "")
    soc, said = host_soc_version("build", None, "", "Ascend310")
    assert soc == "Ascend310" and "not checked against its NPUs" in said


def test_a_name_atc_does_not_know_or_two_kinds_of_chip_ask_for_the_flag() -> None:
    documented = _read("910_24.1.RC2_processes.txt")
    with pytest.raises(RemoteError, match="names the host's chip xxx, which is no --soc_version ATC knows"):
        host_soc_version("train", documented, "", "")
    mixed = NpuSmiInfo(version="", chips=(*_read("310P3_2cards.txt").chips, *_read("310B1_23.0.rc3.txt").chips))
    with pytest.raises(RemoteError, match="several kinds of NPU"):
        host_soc_version("mixed", mixed, "", "")
