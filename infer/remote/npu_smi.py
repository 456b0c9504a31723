"""`npu-smi info`'s table, read as data: each NPU chip's number, name and health, and the device id msame takes.

The table's layout is public (Huawei's npu-smi documentation; the samples the tests hold name their sources):
a header pair, then per chip a pair of rows between ``+===+`` rules,

    | NPU     Name      | Health          | Power(W)     Temp(C)  ...        |
    | Chip    Device    | Bus-Id          | AICore(%)    Memory-Usage(MB) ...|
    | 0       310P3     | OK              | 15.8         42       ...        |
    | 0       0         | 0000:82:00.0    | 0            1074 / 21534        |

Inference cards (310, 310P, 310B) have a ``Device`` column: the logical id ACL, msame and ais_bench take
(``--device``), which differs from the NPU number on a multi-chip card (an Atlas 300I's four 310s are NPU 6, chips
0 to 3, devices 3 to 6). Training servers' tables (910) have none: there the NPU number is the device. A process
table may follow (``| NPU Chip | Process id |...``); it ends the chips.

ATC's ``--soc_version`` is ``Ascend`` + the name (``310P3`` -> ``Ascend310P3``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atc_wrap.atc.soc import KNOWN_SOC_VERSIONS


@dataclass(frozen=True)
class NpuChip:
    """One chip of `npu-smi info`."""

    npu: int  # the NPU (card) number
    chip: int  # the chip's number on its card
    device: int  # the logical device id the tools take (--device)
    name: str  # 310, 310P3, 910B3...
    health: str  # OK, Warning, Alarm, Critical, UNKNOWN

    @property
    def soc_version(self) -> str:
        """ATC's spelling of the chip; "" when npu-smi's name is no chip ATC knows (``310B``, or ``xxx`` in a
        document)."""
        soc = f"Ascend{self.name}"
        return soc if soc in KNOWN_SOC_VERSIONS else ""

    def to_json(self) -> dict[str, object]:
        return {"npu": self.npu, "chip": self.chip, "device": self.device, "name": self.name, "health": self.health,
                "soc_version": self.soc_version}


@dataclass(frozen=True)
class NpuSmiInfo:
    """What `npu-smi info` said: its version and the chips."""

    version: str  # the driver version of its title line ("Version: 23.0.0"); "" where it gave none
    chips: tuple[NpuChip, ...]

    @property
    def soc_versions(self) -> tuple[str, ...]:
        """ATC's names of the chips, each once, in order (unknown names left out)."""
        return tuple(dict.fromkeys(chip.soc_version for chip in self.chips if chip.soc_version))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(chip.name for chip in self.chips))

    def describe(self) -> str:
        """``310P3 on devices 0, 1`` (one clause per chip name)."""
        if not self.chips:
            return "no NPU"
        return "; ".join(f"{name} on device{'s' if len(devices) > 1 else ''} {', '.join(devices)}"
                         for name in self.names
                         for devices in [[str(c.device) for c in self.chips if c.name == name]])

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "chips": [chip.to_json() for chip in self.chips]}


class NpuSmiFormatError(ValueError):
    """A text that is not `npu-smi info`'s table (its header was not found)."""


_VERSION = re.compile(r"Version:\s*(\S+)")
_FIRST = re.compile(r"^(\d+)\s+(\S+)$")  # NPU  Name
_SECOND = re.compile(r"^(\d+)(?:\s+(\d+))?$")  # Chip [Device]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_npu_smi_info(text: str) -> NpuSmiInfo:
    """The chips of `npu-smi info`'s output; raises `NpuSmiFormatError` when the table's header is not there."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").splitlines()]
    version = next((m.group(1) for line in lines[:4] if (m := _VERSION.search(line))), "")
    header = next((i for i, line in enumerate(lines) if line.startswith("|")
                   and re.match(r"NPU\s+Name", _cells(line)[0]) and "Health" in line), None)
    if header is None or header + 1 >= len(lines) or not _cells(lines[header + 1])[0].startswith("Chip"):
        raise NpuSmiFormatError("no 'NPU Name | Health' and 'Chip ...' header rows")
    has_device = "Device" in _cells(lines[header + 1])[0]
    chips: list[NpuChip] = []
    pending: tuple[int, str, str] | None = None
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            continue  # the +---+ rules between chips
        cells = _cells(line)
        if len(cells) >= 2 and cells[1].startswith("Process"):
            break  # the process table: no more chips
        first = _FIRST.match(cells[0])
        if pending is None and first is not None and len(cells) >= 2:
            pending = (int(first.group(1)), first.group(2), cells[1].split()[0] if cells[1] else "")
            continue
        second = _SECOND.match(cells[0])
        if pending is not None and second is not None:
            npu, name, health = pending
            chip = int(second.group(1))
            device = int(second.group(2)) if has_device and second.group(2) is not None else npu
            chips.append(NpuChip(npu=npu, chip=chip, device=device, name=name, health=health))
        pending = None
    return NpuSmiInfo(version=version, chips=tuple(chips))
