"""`infer compare --workers N`: each output's batches split into N contiguous shards, measured in N processes.

Only the dispatch lives here. The passes and the fold are `infer.compare.passes.measure_output`, the same code the
single-process path runs over one shard; workers return per-batch pieces and this process folds them in dataset
order, so the result equals one process's bit for bit.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from infer.compare.compare import CompareOptions
from infer.compare.passes import measure_output
from infer.compare.result import OutputResult
from infer.compare.sources import OutputPair
from infer.compare.thresholds import Thresholds


def compare_outputs_in_workers(pairs: tuple[OutputPair, ...], thresholds: Thresholds, options: CompareOptions,
                               labels: np.ndarray | None) -> tuple[OutputResult, ...]:
    """Every output, its batches split over `options.workers` processes (spawned: TensorFlow may be loaded)."""
    from infer.run.shard import split

    if not pairs:
        return ()
    shards = [frozenset(s.stems) for s in split(pairs[0].manifest.stems, options.workers)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(shards), mp_context=context) as pool:
        return tuple(measure_output(pair, thresholds, options, labels, shards, pool) for pair in pairs)
