"""A fake ``python3 -m ais_bench``: the real one's layout, summary and log lines, on the ONNX model beside the om.

Writes OUT/<%Y_%m_%d-%H_%M_%S>/<stem>_<i>.bin and OUT/<that folder>_summary.json; FAKE_AIS_BENCH_FAIL=1 makes it
log an [ERROR] and exit 1, as the real one does on a bad input. It dumps as the real one does (fake_dump.py):
``--acl_json_path FILE`` is the configuration, else ``--dump 1`` writes <--output>/acl.json (dump_mode all,
dump_path <--output>/dump, the om's name before its first '.' as model_name); warm-up runs execute the model too
(ais_bench/infer/miscellaneous.py get_acl_json_path, __main__.py warmup; Ascend/tools 9d6da90).

Gears (fake_gears.py): the first of --dymBatch, --dymHW, --dymDims, --dymShape given is used, the others ignored
(set_session_options); a gear the om lacks fails its session with the C++ check's message. Every output file is the
gear's real size (its tensor takes the current gear's output dims); --outputSize sets the output buffers, and a
shape-range om's outputs, of size 0, need it (``out i:0 size is zero``). Unlike the real one, a bin whose size is
not the input's at the gear is refused rather than concatenated with the next ones into a batch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fake_dump import device_dump
from fake_gears import GearRefused, chosen_shapes, om_gears
from fake_om import input_names, output_buffer_sizes, run_om


def str2bool(text: str) -> bool:
    return text.lower() in ("1", "true", "t", "yes", "y")


def acl_json_for(args: argparse.Namespace) -> Path | None:
    """ais_bench's get_acl_json_path: --acl_json_path, else for --dump one written into --output."""
    if args.acl_json_path is not None:
        return Path(args.acl_json_path)
    if not args.dump:
        return None
    dump_path = Path(args.output) / "dump"
    dump_path.mkdir(parents=True, exist_ok=True)
    written = Path(args.output) / "acl.json"
    written.write_text(json.dumps({"dump": {"dump_list": [{"model_name": Path(args.model).name.split(".")[0]}],
                                            "dump_mode": "all", "dump_path": str(dump_path)}}, indent=4,
                                  sort_keys=True))
    return written


def main() -> int:
    parser = argparse.ArgumentParser(prog="ais_bench")
    parser.add_argument("--model", required=True)
    parser.add_argument("--input", default="")
    parser.add_argument("--output", default="")
    parser.add_argument("--outfmt", default="BIN")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--loop", type=int, default=1)
    parser.add_argument("--warmup_count", type=int, default=1)
    parser.add_argument("--dump", type=str2bool, default=False)
    parser.add_argument("--acl_json_path", default=None)
    parser.add_argument("--dymBatch", type=int, default=0)
    parser.add_argument("--dymHW", default=None)
    parser.add_argument("--dymDims", default=None)
    parser.add_argument("--dymShape", default=None)
    parser.add_argument("--outputSize", default=None)
    args = parser.parse_args()
    if args.dump and not args.output:
        print("[ERROR] when dump or profiler, miss output path, please check them!")
        return 1
    try:
        dump = device_dump(acl_json_for(args), Path(args.model), args.device)
    except ValueError as exc:
        print(f"[ERROR] acl init failed: {exc}")
        return 1
    print("[INFO] acl init success")
    if os.environ.get("FAKE_AIS_BENCH_FAIL") == "1":
        print("[ERROR] Invalid input: file size is not equal to model input size")
        return 1
    om = Path(args.model)
    print(f"[INFO] load model {om} success")
    try:
        shapes, buffers = _session_options(args, om)
    except GearRefused as refused:
        print("\n".join(refused.lines))
        print(f"RuntimeError: {refused.lines[0].removeprefix('[ERROR] ')}")
        return 1
    name = datetime.now().strftime("%Y_%m_%d-%H_%M_%S")
    out = Path(args.output) / name
    out.mkdir(parents=True, exist_ok=True)
    dirs = [Path(d) for d in args.input.split(",")]
    times = []
    count = 0
    names = input_names(dirs)
    if dump is not None:
        for _ in range(args.warmup_count):  # a warm-up run is an execution of the model: dumped as well
            dump.execution(dirs, names[0])
    try:
        ran = run_om(om, dirs, shapes)
    except ValueError as exc:
        print(f"[ERROR] {exc}")
        return 1
    for file_name, (stem, outputs) in zip(names, ran, strict=True):
        if dump is not None:
            dump.execution(dirs, file_name)
        start = time.perf_counter()
        for index, array in enumerate(outputs):
            buffer = buffers[index]
            if buffer is not None and array.nbytes > buffer:
                print(f"[ERROR] output {index} needs {array.nbytes} bytes, its buffer holds {buffer}")
                return 1
            array.tofile(out / f"{stem}_{index}.bin")  # at the gear's shape: its real size
        times.append((time.perf_counter() - start) * 1000 + 0.25)
        count += outputs[0].shape[0]
    stats = np.asarray(times)
    summary = {
        "NPU_compute_time": {"min": float(stats.min()), "max": float(stats.max()), "mean": float(stats.mean()),
                             "median": float(np.median(stats)), "percentile(99%)": float(np.percentile(stats, 99))},
        "H2D_latency": {"mean": 0.01}, "D2H_latency": {"mean": 0.01},
        "throughput": 1000.0 * count / float(stats.sum()),
    }
    (Path(args.output) / f"{name}_summary.json").write_text(json.dumps(summary))
    print("[INFO] -----------------Performance Summary------------------")
    print(f"[INFO] NPU_compute_time (ms): min = {stats.min():.3f}, max = {stats.max():.3f}, "
          f"mean = {stats.mean():.3f}, median = {np.median(stats):.3f}")
    print(f"[INFO] throughput 1000*batchsize.mean({outputs[0].shape[0]})/NPU_compute_time.mean: "
          f"{summary['throughput']:.3f}")
    print("[INFO] ------------------------------------------------------")
    print("[INFO] unload model success, model Id is 1")
    return 0


def _session_options(args: argparse.Namespace, om: Path) -> tuple[tuple[tuple[int, ...], ...] | None,
                                                                    list[int | None]]:
    """set_session_options: the first gear flag given (the others ignored), then --outputSize's buffers."""
    gears = om_gears(om)
    first = next((name for name in ("dymBatch", "dymHW", "dymDims", "dymShape") if getattr(args, name)), None)
    shapes, _ = chosen_shapes(gears, batch=args.dymBatch if first == "dymBatch" else 0,
                              hw=args.dymHW if first == "dymHW" else None,
                              dims=args.dymDims if first == "dymDims" else None,
                              shape=args.dymShape if first == "dymShape" else None)
    buffers = output_buffer_sizes(om, gears)
    if args.outputSize is not None:
        given = [int(v) for v in args.outputSize.split(",")]
        buffers = [*given, *buffers[len(given):]]  # the first k outputs' buffers
    for index, size in enumerate(buffers):
        if size == 0:
            raise GearRefused(f"[ERROR] out i:{index} size is zero")
    return shapes, buffers


if __name__ == "__main__":
    sys.exit(main())
