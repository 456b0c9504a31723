"""What the fake msame and ais_bench compute: a fake ``m.om`` is run as the ``m.onnx`` beside it, by ONNX Runtime.

So their outputs are computed from the bins for real, and the path after them (renaming, dtype reading, compare)
is tested on true numbers. Inputs are paired by file name across folders and read in lexicographic order, as
msame reads them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from fake_gears import FakeGears

_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
              "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(int8)": np.int8,
              "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


# A fake om that carries its model (what the fake atc writes with FAKE_ATC_COMPILE=onnx): this line, then the
# ONNX model's bytes. It goes wherever the om goes (an Ascend host over SSH), with no model.onnx beside it.
EMBEDDED = b"fake om: an ONNX model follows\n"


def onnx_of(om: Path) -> str | bytes:
    """The ONNX model a fake om runs: the one it carries, else model.onnx beside it, else (a real-format om,
    tests/npu_models.py's, copied elsewhere: an Ascend host's working folder) the one beside the pb its atc_cmdline
    names, as the fake device computes its dump from that pb."""
    with open(om, "rb") as handle:
        head = handle.read(len(EMBEDDED))
    if head == EMBEDDED:
        return om.read_bytes()[len(EMBEDDED):]
    beside = om.with_suffix(".onnx")
    if not beside.is_file():
        pb = _converted_pb(om)
        if pb is not None and pb.with_suffix(".onnx").is_file():
            return str(pb.with_suffix(".onnx"))
    return str(beside)


def _converted_pb(om: Path) -> Path | None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.npu_device
    try:
        from tests.npu_device import pb_of, read_device_model

        return pb_of(read_device_model(om, set()))
    except Exception:  # not a real-format om: nothing names a pb
        return None


def input_names(dirs: list[Path]) -> list[str]:
    return sorted(p.name for p in dirs[0].iterdir() if p.suffix == ".bin")


def run_om(om: Path, dirs: list[Path],
           shapes: tuple[tuple[int, ...], ...] | None = None) -> list[tuple[str, list[np.ndarray]]]:
    """(stem, outputs) for every file name of the first input folder; `shapes` are the inputs' shapes at the gear
    the tool was given (None: the model's own, static shapes)."""
    import onnxruntime as ort

    session = ort.InferenceSession(onnx_of(om), providers=["CPUExecutionProvider"])
    results = []
    for name in input_names(dirs):
        feeds = {}
        for index, (spec, folder) in enumerate(zip(session.get_inputs(), dirs, strict=True)):
            data: np.ndarray = np.fromfile(folder / name, dtype=_ORT_TYPES[spec.type])
            shape = shapes[index] if shapes is not None else tuple(int(d) for d in spec.shape)
            if data.size != int(np.prod(shape)):
                raise ValueError(f"input file size is not equal to model input size ({folder / name})")
            feeds[spec.name] = data.reshape(shape)
        results.append((Path(name).stem, list(session.run(None, feeds))))
    return results


def output_buffer_sizes(om: Path, gears: FakeGears | None) -> list[int | None]:
    """What ACL reports as each output's size (aclmdlGetOutputSizeByIndex): the largest over the gears for a gear
    om, 0 for a shape-range om (its output size is unknown until it runs); None for a static om, whose outputs
    are their own size."""
    import onnxruntime as ort

    session = ort.InferenceSession(onnx_of(om), providers=["CPUExecutionProvider"])
    if gears is None:
        return [None] * len(session.get_outputs())
    if gears.kind == "range":
        return [0] * len(session.get_outputs())
    sizes = [0] * len(session.get_outputs())
    for gear in gears.gears:
        feeds: dict[str, np.ndarray] = {
            spec.name: np.zeros(shape, _ORT_TYPES[spec.type])
            for spec, shape in zip(session.get_inputs(), gears.shapes_at(gear), strict=True)}
        sizes = [max(size, out.nbytes) for size, out in zip(sizes, session.run(None, feeds), strict=True)]
    return list(sizes)
