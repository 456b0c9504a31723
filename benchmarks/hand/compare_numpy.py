"""What a user writes by hand instead of `infer compare`: both sides read whole, the metrics in plain numpy.

    python compare_numpy.py ACTUAL_FOLDER GOLDEN_FOLDER SAMPLES WIDTH OUT.json

Reads every ``*_output_0.bin`` of each folder (float32, WIDTH values a sample) in name order, keeps the first
SAMPLES rows (the rest is padding), and writes msaccucmp's metrics over the whole tensors as JSON.
"""

import json
import os
import sys

import numpy as np

actual_folder, golden_folder, samples, width, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    sys.argv[5]


def read(folder: str) -> np.ndarray:
    names = sorted(n for n in os.listdir(folder) if n.endswith("_output_0.bin"))
    whole = np.concatenate([np.fromfile(os.path.join(folder, n), np.float32).reshape(-1, width) for n in names])
    return whole[:samples].astype(np.float64).ravel()


x, y = read(actual_folder), read(golden_folder)
eps = np.finfo(np.float64).eps
metrics = {"CosineSimilarity": float(np.sum(x * y) / (np.sqrt(np.sum(x * x)) * np.sqrt(np.sum(y * y))))}
diff = x - y
metrics["MaxAbsoluteError"] = float(np.max(np.abs(diff)))
metrics["MeanAbsoluteError"] = float(np.mean(np.abs(diff)))
metrics["RootMeanSquareError"] = float(np.sqrt(np.mean(diff ** 2)))
metrics["RelativeEuclideanDistance"] = float(np.sqrt(np.sum(diff ** 2) / np.sum(y ** 2)))
del diff
mask = np.abs(y) > eps
relative = np.abs(x[mask] / y[mask] - 1.0)
del mask
metrics["AccumulatedRelativeError"] = float(np.sum(relative))
metrics["MaxRelativeError"] = float(np.max(relative))
metrics["MeanRelativeError"] = float(np.sum(relative)) / x.size  # msaccucmp: the masked-out elements count as 0
del relative
eps32 = np.finfo(np.float32).eps  # msaccucmp: P from the actual side, Q from the golden, clamped at float32's eps
p = np.maximum((x - x.min()) / (x.max() - x.min()), eps32)
p /= p.sum()
q = np.maximum((y - y.min()) / (y.max() - y.min()), eps32)
q /= q.sum()
metrics["KullbackLeiblerDivergence"] = float(np.sum(p * np.log(p / q)))
del p, q
metrics["AllclosePassRate"] = float(np.mean(np.abs(x - y) <= 1e-4 + 1e-3 * np.abs(y)))  # isclose, finite values
with open(out, "w") as handle:
    json.dump(metrics, handle)
