"""How far a healthy fp16 implementation other than the stand-in's emulation sits from the expected-error band, per
tensor: ``python benchmarks/measure_bands.py [--work DIR]``. The factor `--expected-factor` (default 10) must leave
room for it.

For each family of tests/infer/compare/band_families.py that can be built in float16 (a 10-block ResNet-style
network with batch norms, a MobileNet-style depthwise stack, a self-attention block with its feed-forward layers):
the float32 graph is converted to the stand-in under force_fp16 and compared with `compare --layerwise`, which gives
each tensor its band (the emulation's RED against TensorFlow). The same graph built in float16 (same names, the
weights rounded; batch-norm statistics in float32, as TensorFlow takes them) is run by TensorFlow's own fp16 kernels:
an undamaged fp16 computation with other roundings, other accumulation and no emulation. Each tensor's RED there,
over its band, is what a healthy conversion computed differently (an NPU's fused kernels) may reach. Printed per
family: the tensors compared, the median, 99th percentile and largest ratio, and the tensor of the largest.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from binio.binfile import read_bin
from binio.manifest import load_manifest
from infer.compare._compare import CompareOptions, compare
from infer.compare._judge.metrics import relative_euclidean_distance
from infer.contract import load_contract
from infer.convert._convert import ConvertOptions, convert_model
from infer.run import run_model
from infer.run.options import RunOptions
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.infer.compare.band_families import Family, families


def _tf_values(family: Family, dtype_name: str, batch: np.ndarray) -> dict[str, np.ndarray]:
    """Every float tensor of the family built in `dtype_name`, on `batch`, in float64."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        family.build(tf, getattr(tf, dtype_name))
    tensors = [t for op in graph.get_operations() if op.type not in ("Const", "Placeholder") for t in op.outputs
               if (t.dtype.is_floating and t.consumers()) or t.name == family.output_name]
    with tf.compat.v1.Session(graph=graph) as session:
        feed = {graph.get_tensor_by_name(family.input_name): batch.astype(getattr(np, dtype_name))}
        values = session.run(tensors, feed)
    return {t.name: np.asarray(v, dtype=np.float64) for t, v in zip(tensors, values, strict=True)}


def measure(family: Family, work: Path) -> list[tuple[str, float]]:
    """(tensor, RED of TensorFlow's fp16 over its band) for every tensor the layer-wise comparison gave a band."""
    frozen = write_frozen(work / family.name / "frozen", lambda tf: family.build(tf, tf.float32),
                          (family.input_name,), (family.output_name,))
    bins = write_bins(work / family.name / "bins", family.input_name, family.input_shape)
    folder = work / family.name / "force_fp16"
    shutil.copytree(frozen.folder, folder)
    contract = convert_model(load_contract(folder / "model.json"),
                             ConvertOptions(target="onnx", precision_mode="force_fp16")).contract
    actual = run_model(contract.path, bins, work / family.name / "out", RunOptions(backend="onnxrt")).folder
    result = compare(contract.path, bins, actual, cache_root=work / "cache", options=CompareOptions(layerwise=True))
    layers = result.layerwise
    assert layers is not None
    manifest = load_manifest(bins / "dataset.json")
    item = manifest.input(family.input_name)
    entry = next(f for f in item.files if Path(f.name).stem == layers.batch_stem)
    batch = read_bin(manifest.file_path(item, entry), item.spec)
    golden, other = _tf_values(family, "float32", batch), _tf_values(family, "float16", batch)
    found = []
    for row in layers.matched:
        if not row.has_band or row.tensor not in other:
            continue
        found.append((row.tensor, relative_euclidean_distance(other[row.tensor], golden[row.tensor]) / row.band))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="folder for the models and runs (default: a temporary one)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="measure-bands-"))
    every: list[float] = []
    for family in families():
        try:
            ratios = measure(family, work)
        except ValueError as exc:  # a family built in float32 only
            print(f"{family.name}: skipped ({exc})")
            continue
        values = np.array([r for _, r in ratios])
        worst = max(ratios, key=lambda item: item[1])
        every += list(values)
        print(f"{family.name}: {len(values)} tensors; TF fp16 RED / band: median {np.median(values):.3g}, "
              f"p99 {np.percentile(values, 99):.3g}, max {worst[1]:.3g} ({worst[0]})")
    print(f"all: {len(every)} tensors; median {np.median(every):.3g}, p99 {np.percentile(every, 99):.3g}, "
          f"max {max(every):.3g}")


if __name__ == "__main__":
    main()
