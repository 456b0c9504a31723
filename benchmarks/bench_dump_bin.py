"""`infer dump-bin` against the scripts people write by hand, whole processes, measured in one run on the same data:

    python benchmarks/bench_dump_bin.py [--quick] [--only npy] [--samples 500 1000] [--targets float16]
                                        [--rounds 7] [--folder /dev/shm]

- an .npy -> float32 and -> float16 bins, at 300 and 600 MB, against `hand/dump_npy.py` (memory-map, slice,
  astype, tofile); targets: <= 1.1x the hand script's time at 600 MB, <= 1.25x at 300 MB;
- a folder of JPEGs (640x480 -> 224x224, float32 x 1/255) with --workers 1, 2 and every core, against
  `hand/dump_images.py` (one process, Pillow); target: --workers 2 >= 1.6x the hand script's speed on 2 cores;
- the peak memory of a dump of a dataset 1000x its batch (in-process; target: a few batches).
Both sides' bins are checked equal byte for byte. Times are medians of alternated runs (`endtoend.alternate`), wall
time and CPU time (user + system of the whole process): on a shared machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from endtoend import Row, Side, alternate, environment, hand_command, infer_command, median_note, same_files

from binio.spec import TensorSpec
from infer.contract import ConvertedInfo, ModelContract, SourceInfo


def contract(folder: Path, shape: tuple[int, ...], *, fp16: bool) -> ModelContract:
    """A contract by hand: dump-bin reads names, dtypes and shapes only."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.pb").write_bytes(b"stand-in")
    (folder / "model.onnx").write_bytes(b"stand-in converted")
    spec = TensorSpec("images:0", "float32", shape, "NHWC")
    outputs = (TensorSpec("out:0", "float32", (shape[0], 1)),)
    converted = ConvertedInfo("onnx", "model.onnx", hashlib.sha256(b"stand-in converted").hexdigest(),
                              (spec.with_dtype("float16"),), outputs) if fp16 else None
    return ModelContract(path=folder / "model.json", pb="model.pb", pb_sha256=hashlib.sha256(b"stand-in").hexdigest(),
                         source=SourceInfo("bench", "pb", "", ""), inputs=(spec,), outputs=outputs,
                         converted=converted).save()


def write_npy(path: Path, samples: int) -> float:
    """Random float32 224x224x3 samples, written a few at a time; the file's size in MB."""
    rng = np.random.default_rng(0)
    array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(samples, 224, 224, 3))
    for start in range(0, samples, 50):
        array[start:start + 50] = rng.random((min(50, samples - start), 224, 224, 3), dtype=np.float32)
    array.flush()
    del array
    np.load(path, mmap_mode="r").sum(dtype=np.float64)  # into the page cache for both sides
    return path.stat().st_size / 1e6


def bench_npy(root: Path, sizes: tuple[int, ...], batch: int, rounds: int,
              targets: tuple[str, ...] = ("float32", "float16")) -> list[Row]:
    rows: list[Row] = []
    models = {target: contract(root / f"model_{target}", (batch, 224, 224, 3), fp16=target == "float16")
              for target in targets}
    for samples in sizes:
        data = root / f"data_{samples}.npy"
        mb = write_npy(data, samples)
        target_ratio = "<= 1.1x" if mb >= 500 else "<= 1.25x"
        for target, model in models.items():
            ours, hand = root / f"ours_{target}", root / f"hand_{target}"
            print(f"npy -> {target}: {samples} samples ({mb:.0f} MB float32), batch {batch}")
            result = alternate(
                [Side("infer dump-bin", infer_command("dump-bin", "-m", model.path, "-o", ours, data), ours),
                 Side("hand/dump_npy.py", hand_command("dump_npy.py", data, hand, target, batch), hand)],
                rounds, check=functools.partial(same_files, ours / "images", hand))
            rows.append((f"npy -> {target}, {mb:.0f} MB: time", result.ratio("infer dump-bin", "hand/dump_npy.py"),
                         median_note(result, "infer dump-bin", "hand/dump_npy.py", f"{target_ratio}, lower is better")))
            rows.append((f"npy -> {target}, {mb:.0f} MB: CPU time",
                         result.cpu_ratio("infer dump-bin", "hand/dump_npy.py"),
                         "user + system of the whole process, medians; no target (for scale), lower is better"))
        data.unlink()
    return rows


def write_images(folder: Path, count: int) -> None:
    from PIL import Image

    folder.mkdir()
    rng = np.random.default_rng(1)
    for index in range(count):
        pixels = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
        pixels = np.kron(pixels, np.ones((10, 10, 1), np.uint8))  # 640x480 with some structure for JPEG
        Image.fromarray(pixels).save(folder / f"{index:05d}.jpg", quality=90)


def bench_images(root: Path, count: int, batch: int, rounds: int) -> list[Row]:
    folder = root / "images"
    write_images(folder, count)
    model = contract(root / "model_images", (batch, 224, 224, 3), fp16=False)
    scale = 1 / 255
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    hand = root / "hand_images"
    sides = [Side("hand/dump_images.py", hand_command("dump_images.py", folder, hand, batch, 224, scale), hand)]
    for workers in sorted({1, 2, cores}):
        out = root / f"ours_images_{workers}"
        sides.append(Side(f"infer dump-bin --workers {workers}",
                          infer_command("dump-bin", "-m", model.path, "-o", out, folder, "--scale", scale,
                                        "--workers", workers), out))
    print(f"images: {count} JPEGs 640x480 -> 224x224x3 float32, batch {batch}, {cores} cores")

    def check() -> str:
        return "; ".join(same_files(side.output / "images", hand) for side in sides[1:] if side.output)

    result = alternate(sides, rounds, check=check)
    rows: list[Row] = []
    for side in sides[1:]:
        speed = result.runs["hand/dump_images.py"].median / result.runs[side.name].median
        target = ">= 1.6x on 2 cores" if "workers 2" in side.name else "none (for scale)"
        rows.append((f"images {side.name.removeprefix('infer dump-bin ')}: speed", speed,
                     median_note(result, side.name, "hand/dump_images.py", f"{target}, higher is better")))
    return rows


_MEMORY_CHILD = """
import json, sys, tracemalloc
from pathlib import Path
from infer.contract import load_contract
from infer.dump_bin._dump import DumpOptions, dump_bins

def status_kb(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])

model, data, out, trace = load_contract(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4] == "trace"
before = status_kb("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # resets the peak RSS (VmHWM) to now: imports are not counted
if trace:  # tracemalloc's own records grow with the objects alive: its run's RSS is not the dump's
    tracemalloc.start()
dump_bins(model, DumpOptions(output=out, sources=(("", data),), dtype="float16"))
print(json.dumps({"rss_before_kb": before, "rss_peak_kb": status_kb("VmHWM"),
                  "traced_peak": tracemalloc.get_traced_memory()[1] if trace else 0}))
"""


def bench_memory(root: Path, batch: int) -> list[Row]:
    """Peak memory of dumps 100x and 1000x the batch: it must not grow with the dataset."""
    shape = (batch, 64, 64, 3)
    batch_bytes = int(np.prod(shape)) * 4
    model = contract(root / "model_memory", shape, fp16=True)
    growth = 0.0
    for batches in (100, 1000):
        samples = batch * batches
        data_path = root / f"big_{batches}.npy"
        array = np.lib.format.open_memmap(data_path, mode="w+", dtype=np.float32, shape=(samples, *shape[1:]))
        array[:] = 0.5
        array.flush()
        del array
        found: dict[str, dict[str, int]] = {}
        for mode in ("rss", "trace"):
            out = root / f"memory_out_{batches}_{mode}"
            child = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(model.path), str(data_path), str(out),
                                    mode], check=True, capture_output=True, text=True, env=environment())
            found[mode] = json.loads(child.stdout)
            shutil.rmtree(out)
        data_path.unlink()
        grown_mb = (found["rss"]["rss_peak_kb"] - found["rss"]["rss_before_kb"]) / 1e3
        traced_mb = found["trace"]["traced_peak"] / 1e6
        growth = grown_mb * 1e6 / batch_bytes
        dataset_mb = samples * batch_bytes / batch / 1e6
        print(f"memory: {batches} batches of {batch_bytes / 1e6:.2f} MB float32 ({dataset_mb:.0f} MB npy)"
              f" -> float16: peak traced allocations {traced_mb:.1f} MB = "
              f"{traced_mb * 1e6 / batch_bytes:.1f} batches; peak RSS (a run without tracing) "
              f"{found['rss']['rss_before_kb'] / 1e3:.0f} MB before "
              f"the dump + {grown_mb:.1f} MB = {growth:.1f} batches")
    return [("dump-bin peak memory, 1000-batch npy", growth, "peak RSS growth in float32 batches, target: a few")]


CASES = ("npy", "images", "memory")


def main(quick: bool = False, *, only: tuple[str, ...] = CASES, samples: tuple[int, ...] | None = None,
         targets: tuple[str, ...] = ("float32", "float16"), rounds: int | None = None,
         folder: Path | None = None) -> list[Row]:
    """`folder`: where the data and both sides' outputs go (default: the temporary folder's file system)."""
    rounds = rounds or (1 if quick else 5)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench_dump_bin_", dir=folder) as tmp:
        root = Path(tmp)
        if "npy" in only:
            rows += bench_npy(root, samples or ((32,) if quick else (500, 1000)), batch=16, rounds=rounds,
                              targets=targets)
        if "images" in only:
            rows += bench_images(root, count=48 if quick else 600, batch=8, rounds=rounds)
        if "memory" in only:
            rows += bench_memory(root, batch=16)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small datasets, one round each")
    parser.add_argument("--only", nargs="+", choices=CASES, default=CASES, help="the cases to run (default: all)")
    parser.add_argument("--samples", nargs="+", type=int,
                        help="npy sizes in 224x224x3 float32 samples (500 = 301 MB; default 500 1000)")
    parser.add_argument("--targets", nargs="+", choices=("float32", "float16"), default=("float32", "float16"),
                        help="npy: the bins' dtypes (default: both)")
    parser.add_argument("--rounds", type=int, help="alternated rounds per case (default 5, 1 with --quick)")
    parser.add_argument("--folder", type=Path,
                        help="put the data and the outputs here, e.g. /dev/shm: a file system in memory measures "
                             "the two sides' own cost without the disk's writeback, which on a shared virtual "
                             "machine can stall either side by seconds at random")
    arguments = parser.parse_args()
    for row in main(quick=arguments.quick, only=tuple(arguments.only),
                    samples=tuple(arguments.samples) if arguments.samples else None,
                    targets=tuple(arguments.targets), rounds=arguments.rounds, folder=arguments.folder):
        print(f"{row[0]}: {row[1]:.2f}x  {row[2]}")
