"""dump-bin against the plain loops people write by hand, measured in one run on the same data. Run by hand:

    python benchmarks/bench_dump_bin.py [--quick]

Prints ratios (dump-bin throughput / the baseline's): the npy path against ``batch.astype(dtype).tofile(path)``
(target >= 0.9x), an image folder with 2 worker processes against a single-process Pillow loop (target >= 1.6x,
needs 2 free cores), and the peak memory of a dump of a dataset 1000x its batch (target: a few batches).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from binio.spec import TensorSpec
from infer.contract import ConvertedInfo, ModelContract, SourceInfo
from infer.dump import DumpOptions, dump_bins


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


def race(runs: int, plain: Callable[[int], Path], ours: Callable[[int], Path]) -> tuple[float, float]:
    """Best-of-`runs` times of both contestants, taking turns (and the lead in turn) and deleting each run's output
    before the next run: both then write to the disk in the same state. All runs of one side followed by all of the
    other would leave the second side writing while the kernel flushes the first side's dirty pages."""
    times: dict[str, list[float]] = {"plain": [], "ours": []}
    for attempt in range(runs):
        order = [("plain", plain), ("ours", ours)]
        for name, work in order if attempt % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            out = work(attempt)
            times[name].append(time.perf_counter() - started)
            shutil.rmtree(out)
    return min(times["plain"]), min(times["ours"])


Row = tuple[str, float, str]


def bench_npy(root: Path, samples: int, batch: int, runs: int) -> list[Row]:
    shape = (batch, 224, 224, 3)
    data_path = root / "data.npy"
    rng = np.random.default_rng(0)
    array = np.lib.format.open_memmap(data_path, mode="w+", dtype=np.float32, shape=(samples, *shape[1:]))
    for start in range(0, samples, batch):
        array[start:start + batch] = rng.random((min(batch, samples - start), *shape[1:]), dtype=np.float32)
    array.flush()
    del array
    np.load(data_path, mmap_mode="r").sum(dtype=np.float64)  # into the page cache for both contestants
    mb = samples * int(np.prod(shape[1:])) * 4 / 1e6
    rows: list[Row] = []
    for target, fp16 in (("float16", True), ("float32", False)):
        model = contract(root / f"model_{target}", shape, fp16=fp16)

        def plain(attempt: int, target: str = target) -> Path:
            out = root / f"plain_{target}_{attempt}"
            out.mkdir()
            source = np.load(data_path, mmap_mode="r")
            for index, start in enumerate(range(0, samples, batch)):
                source[start:start + batch].astype(target).tofile(out / f"{index:06d}.bin")
            return out

        def ours(attempt: int, model: ModelContract = model, target: str = target) -> Path:
            out = root / f"ours_{target}_{attempt}"
            dump_bins(model, DumpOptions(output=out, sources=(("", str(data_path)),)))
            return out

        plain_s, ours_s = race(runs, plain, ours)
        print(f"npy -> {target}: {samples} samples ({mb:.0f} MB float32), batch {batch}: plain astype+tofile "
              f"{plain_s:.2f}s ({mb / plain_s:.0f} MB/s), dump-bin {ours_s:.2f}s ({mb / ours_s:.0f} MB/s), "
              f"ratio {plain_s / ours_s:.2f}x (target >= 0.9x)")
        rows.append((f"dump-bin npy -> {target}", plain_s / ours_s, "throughput vs astype+tofile loop, target >= 0.9"))
    return rows


def bench_images(root: Path, count: int, batch: int, runs: int) -> list[Row]:
    from PIL import Image

    folder = root / "images"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for index in range(count):
        pixels = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
        pixels = np.kron(pixels, np.ones((10, 10, 1), np.uint8))  # 640x480 with some structure for JPEG
        Image.fromarray(pixels).save(folder / f"{index:05d}.jpg", quality=90)
    model = contract(root / "model_images", (batch, 224, 224, 3), fp16=False)
    files = sorted(folder.glob("*.jpg"))

    def plain(attempt: int) -> Path:
        out = root / f"plain_images_{attempt}"
        out.mkdir()
        for index, start in enumerate(range(0, count, batch)):
            rows = []
            for path in files[start:start + batch]:
                with Image.open(path) as image:
                    image = image.convert("RGB")
                    width, height = image.size
                    factor = 224 / min(width, height)
                    size = (round(width * factor), round(height * factor))
                    image = image.resize(size, Image.Resampling.BILINEAR)
                    left, top = (size[0] - 224) // 2, (size[1] - 224) // 2
                    rows.append(np.asarray(image.crop((left, top, left + 224, top + 224)), dtype=np.float32))
            np.stack(rows).astype(np.float32).tofile(out / f"{index:06d}.bin")
        return out

    def ours(attempt: int) -> Path:
        out = root / f"ours_images_{attempt}"
        dump_bins(model, DumpOptions(output=out, sources=(("", str(folder)),), workers=2))
        return out

    plain_s, ours_s = race(runs, plain, ours)
    print(f"images: {count} JPEGs 640x480 -> 224x224x3, batch {batch}: single-process Pillow loop {plain_s:.2f}s "
          f"({count / plain_s:.0f} img/s), dump-bin --workers 2 {ours_s:.2f}s ({count / ours_s:.0f} img/s), "
          f"ratio {plain_s / ours_s:.2f}x (target >= 1.6x; os.cpu_count()={os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f})")
    return [("dump-bin images --workers 2", plain_s / ours_s, "throughput vs 1-process Pillow loop, target >= 1.6")]


_MEMORY_CHILD = """
import json, sys, tracemalloc
from pathlib import Path
from infer.contract import load_contract
from infer.dump import DumpOptions, dump_bins

def status_kb(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])

model, data, out = load_contract(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
before = status_kb("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # resets the peak RSS (VmHWM) to now: imports are not counted
tracemalloc.start()
dump_bins(model, DumpOptions(output=out, sources=(("", data),), dtype="float16"))
print(json.dumps({"rss_before_kb": before, "rss_peak_kb": status_kb("VmHWM"),
                  "traced_peak": tracemalloc.get_traced_memory()[1]}))
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
        child = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(model.path), str(data_path),
                                str(root / f"memory_out_{batches}")], check=True, capture_output=True, text=True)
        found = json.loads(child.stdout)
        data_path.unlink()
        grown_mb = (found["rss_peak_kb"] - found["rss_before_kb"]) / 1e3
        traced_mb = found["traced_peak"] / 1e6
        growth = grown_mb * 1e6 / batch_bytes
        dataset_mb = samples * batch_bytes / batch / 1e6
        print(f"memory: {batches} batches of {batch_bytes / 1e6:.2f} MB float32 ({dataset_mb:.0f} MB npy)"
              f" -> float16: peak traced allocations {traced_mb:.1f} MB = "
              f"{traced_mb * 1e6 / batch_bytes:.1f} batches; peak RSS {found['rss_before_kb'] / 1e3:.0f} MB before "
              f"the dump + {grown_mb:.1f} MB = {growth:.1f} batches")
    return [("dump-bin peak memory, 1000-batch npy", growth, "peak RSS growth in float32 batches, target: a few")]


def main(quick: bool = False) -> list[Row]:
    runs = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="bench_dump_bin_") as tmp:
        root = Path(tmp)
        rows = bench_npy(root, samples=64 if quick else 256, batch=16, runs=runs)
        rows += bench_images(root, count=48 if quick else 480, batch=8, runs=runs)
        rows += bench_memory(root, batch=16)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller datasets, one run each")
    main(quick=parser.parse_args().quick)
