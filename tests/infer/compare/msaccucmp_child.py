"""Child process of tests/infer/compare/msaccucmp_code.py: msaccucmp's metrics of array pairs, by its own code.

    python msaccucmp_child.py MSACCUCMP_FOLDER PAIRS.npz RESULTS.json

Each pair (``actual_<i>``, ``golden_<i>`` in the npz) goes through msaccucmp's AlgorithmManager.compare with the
arguments its file comparison gives it (algorithm_manager.py, AlgorithmManagerMain._process_exec: both flattened,
``shape_type`` from the actual's shape), all ten algorithms. One change: its results are strings of six decimals
(cmp_utils/utils.py, format_value), which would hide every difference below 5e-7 and every value of a tensor of
1e-20s, so format_value is made to give the number whole; the StandardDeviation cell keeps its own format.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import numpy as np


def main(folder: str, pairs_path: str, results_path: str) -> None:
    sys.path.insert(0, folder)
    utils: Any = importlib.import_module("cmp_utils.utils")
    utils.format_value = lambda value: repr(float(value))
    manager: Any = importlib.import_module("algorithm_manager.algorithm_manager").AlgorithmManager("", "all", "")
    pairs = np.load(pairs_path)
    results = []
    for index in range(len(pairs.files) // 2):
        actual, golden = pairs[f"actual_{index}"], pairs[f"golden_{index}"]
        values, _ = manager.compare(actual.flatten(), golden.flatten(), {
            "my_output_dump_file": f"actual_{index}", "ground_truth_dump_file": f"golden_{index}",
            "shape_type": utils.get_shape_type(actual.shape)})
        results.append(dict(zip(manager.get_result_title(), values, strict=True)))
    with open(results_path, "w") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main(*sys.argv[1:4])
