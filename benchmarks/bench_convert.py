"""`infer convert --target onnx` against tf2onnx's own conversion, whole processes:
``python benchmarks/bench_convert.py [--quick]``.

Freezes the wide MLP of bench_freeze.py (three dense layers; 2048 wide: 48 MiB of float32 weights, ``--quick``:
512), then alternates (`endtoend.alternate`) `infer convert --target onnx --precision-mode force_fp32` (no fp16
emulation: the same arithmetic as tf2onnx's model) and `hand/convert_tf2onnx.py` (tf2onnx.convert.from_graph_def,
as ``python -m tf2onnx.convert`` runs it). The two models are checked to give equal outputs on the same seeded
input in ONNX Runtime (their bytes differ: infer renumbers tf2onnx's generated names and records metadata). No
target in the issue: tf2onnx deep-copies and re-serialises the whole graph, weights included, around each of its
optimizer passes, which infer avoids (`atc_wrap/standin/convert.py`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import build_checkpoint
from endtoend import Row, Side, alternate, hand_command, infer_command, median_note


def same_outputs(ours: Path, theirs: Path, width: int) -> str:
    import numpy as np
    import onnxruntime as ort

    feed = np.random.default_rng(0).standard_normal((8, width)).astype(np.float32)
    outputs = [ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x:0": feed})[0]
               for path in (ours, theirs)]
    if not np.array_equal(outputs[0], outputs[1]):
        raise AssertionError(f"{ours} and {theirs} give different outputs")
    return "the two models give equal outputs"


def measure(width: int, rounds: int) -> list[Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-convert-"))
    try:
        prefix = build_checkpoint(work / "checkpoint", width, 3)
        from infer.freeze import FreezeOptions, freeze_model

        frozen = freeze_model(prefix, work / "model", FreezeOptions(
            outputs=("y:0",), inputs=("x:0",), batch=8, verify=False)).contract
        print(f"convert: MLP of 3 {width}x{width} dense layers ({3 * (width * width + width) * 4 / 2**20:.0f} MiB)")
        ours_onnx, hand_onnx = frozen.folder / "model.onnx", work / "hand" / "model.onnx"  # ours: beside model.json
        (work / "hand").mkdir()
        ours = Side("infer convert", infer_command("convert", frozen.path, "--target", "onnx", "--precision-mode",
                                                   "force_fp32"), ours_onnx)
        hand = Side("hand/convert_tf2onnx.py",
                    hand_command("convert_tf2onnx.py", frozen.pb_path, "x:0", "y:0", hand_onnx), hand_onnx)
        result = alternate([ours, hand], rounds, check=lambda: same_outputs(ours_onnx, hand_onnx, width))
        peaks = result.runs[ours.name].median_peak_mib, result.runs[hand.name].median_peak_mib
        return [("MLP to ONNX: time", result.ratio(ours.name, hand.name),
                 median_note(result, ours.name, hand.name, "none (for scale), lower is better")),
                ("MLP to ONNX: peak RSS", peaks[0] / peaks[1],
                 f"{peaks[0]:.0f} MiB vs {peaks[1]:.0f} MiB; target none (for scale), lower is better")]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(quick: bool = False) -> list[Row]:
    return measure(512 if quick else 2048, rounds=1 if quick else 3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512-wide layers, one round")
    main(quick=parser.parse_args().quick)
