"""What the fake msame and ais_bench compute: a fake ``m.om`` is run as the ``m.onnx`` beside it, by ONNX Runtime.

So their outputs are computed from the bins for real, and the path after them (renaming, dtype reading, compare)
is tested on true numbers. Inputs are paired by file name across folders and read in lexicographic order, as
msame reads them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
              "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(int8)": np.int8,
              "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def input_names(dirs: list[Path]) -> list[str]:
    return sorted(p.name for p in dirs[0].iterdir() if p.suffix == ".bin")


def run_om(om: Path, dirs: list[Path]) -> list[tuple[str, list[np.ndarray]]]:
    """(stem, outputs) for every file name of the first input folder."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(om.with_suffix(".onnx")), providers=["CPUExecutionProvider"])
    results = []
    for name in input_names(dirs):
        feeds = {}
        for spec, folder in zip(session.get_inputs(), dirs, strict=True):
            data: np.ndarray = np.fromfile(folder / name, dtype=_ORT_TYPES[spec.type])
            feeds[spec.name] = data.reshape([int(d) for d in spec.shape])
        results.append((Path(name).stem, list(session.run(None, feeds))))
    return results
