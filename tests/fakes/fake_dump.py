"""The fake msame's and ais_bench's NPU dump: an acl.json's ``dump`` section honoured as GE honours it.

For each execution of the model, every op of the om (a real-format om, as tests/npu_models.py writes one) is dumped
into ``{dump_path}/{time}/{device}/{model_name}/{model_id}/{step}/``, by tests/npu_device.py: its tensors computed
on the pb the om's atc_cmdline names, in the om's device layouts, written with the test's own dump writer. Only the
model named in ``dump_list`` is dumped (GE matches it against the model's file name), ``dump_mode`` picks inputs,
outputs or both, and ``dump_path`` must exist. FAKE_NPU_DAMAGE=TENSOR makes the device compute that TF tensor wrong
(every other sign flipped), and the ops after it read the damaged value.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.npu_device

MODEL_ID = 1


@dataclass(frozen=True)
class DumpConfig:
    path: Path
    mode: str
    model_names: tuple[str, ...]


def read_dump_config(acl_json: Path) -> DumpConfig | None:
    """The dump section of an acl.json; None when it has none (a profiler config, ``{}``)."""
    data = json.loads(acl_json.read_text())
    dump = data.get("dump") if isinstance(data, dict) else None
    if not isinstance(dump, dict):
        return None
    names = tuple(str(item.get("model_name", "")) for item in dump.get("dump_list", []) if isinstance(item, dict))
    return DumpConfig(Path(str(dump.get("dump_path", ""))), str(dump.get("dump_mode", "output")), names)


class DeviceDump:
    """What one tool start dumps: the om read once, each execution written as the next step."""

    def __init__(self, config: DumpConfig, om: Path, device: int) -> None:
        from tests.npu_device import pb_of, read_device_model, tf_node_names

        self.config, self.om, self.device = config, om, device
        self.time = datetime.now().strftime("%Y%m%d%H%M%S")
        self.step = 0
        self.model = read_device_model(om, set())
        pb = pb_of(self.model)
        if pb is None or not pb.is_file():
            raise ValueError(f"{om}: its atc_cmdline names no pb here")
        self.pb = pb
        self.model = read_device_model(om, tf_node_names(pb))

    @property
    def wanted(self) -> bool:
        return self.om.stem in self.config.model_names

    def data_inputs(self, dirs: list[Path], name: str) -> dict[str, np.ndarray]:
        """The bins of one execution, read as the om's Data ops describe them, by TF tensor."""
        data_ops = [op for op in self.model.ops if op.type == "Data"]
        feeds = {}
        for op, folder in zip(data_ops, dirs, strict=True):
            tensor = op.outputs[0]
            feeds[f"{op.name}:0"] = np.fromfile(folder / name, dtype=tensor.dtype).reshape(tensor.origin_shape)
        return feeds

    def execution(self, dirs: list[Path], name: str) -> None:
        """Dumps one execution (the files `name` of `dirs`), as the next step."""
        from tests.npu_device import device_values, dumped_ops, write_standard_dumps

        if not self.wanted:
            return
        folder = self.config.path / self.time / str(self.device) / self.om.stem / str(MODEL_ID) / str(self.step)
        values = device_values(self.pb, self.model, self.data_inputs(dirs, name),
                               damage=os.environ.get("FAKE_NPU_DAMAGE", ""))
        stamp = int(datetime.now().timestamp() * 1_000_000)
        write_standard_dumps(folder, dumped_ops(self.model, values), mode=self.config.mode, timestamp=stamp)
        self.step += 1


def device_dump(acl_json: Path | None, om: Path, device: int) -> DeviceDump | None:
    """The dump a tool start makes with this acl.json (None: no dump asked for); refuses as GE does a dump_path
    that does not exist (ValueError, the fake's [ERROR])."""
    if acl_json is None or not acl_json.is_file():
        return None
    config = read_dump_config(acl_json)
    if config is None:
        return None
    if not config.path.is_dir():
        raise ValueError(f"dump_path {config.path} does not exist")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        return DeviceDump(config, om, device)
    except Exception as exc:  # a fake om (not a real-format one): this fake has nothing to dump it from
        raise ValueError(f"{om}: cannot be dumped by this fake ({type(exc).__name__}: {exc})") from exc
