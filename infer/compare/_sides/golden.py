"""The golden outputs: TensorFlow on the frozen pb over the same bins, computed once and cached.

The cache key is the sha256 of the frozen pb and of dataset.json (which holds the sha256 of every bin), so a
changed model or dataset never reuses stale outputs. The cache lives beside the contract, in
``.infer-cache/golden/<key>/<timestamp>/``, an ordinary run folder written by `infer.run.run`.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from binio.binfile import sha256_file
from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.options import RunOptions, ScaleOptions
from infer.run.record import has_record, load_run

log = logging.getLogger(__name__)

CACHE_FOLDER = ".infer-cache"


def golden_key(contract: ModelContract, manifest: DatasetManifest) -> str:
    digest = hashlib.sha256()
    digest.update(contract.pb_sha256.encode())
    digest.update(sha256_file(manifest.path).encode())
    return digest.hexdigest()[:32]


def cached_run(root: Path) -> Path | None:
    """The newest completed run folder under `root`, if any (an interrupted one is not trusted)."""
    if not root.is_dir():
        return None
    for folder in sorted((p for p in root.iterdir() if p.is_dir()), reverse=True):
        if has_record(folder) and load_run(folder).completed:
            return folder
    return None


def tensorflow_golden(contract: ModelContract, manifest: DatasetManifest, *, cache_root: Path | None = None,
                      on_run: Callable[[], None] | None = None, workers: int = 1,
                      progress: Callable[[int, int], None] | None = None, allow_host_ops: bool = False
                      ) -> tuple[Path, str]:
    """The run folder of TensorFlow's outputs for these bins, and whether it came from the cache; `on_run` is
    called when they are not cached, before TensorFlow starts. With `workers` > 1 the batches are split over
    that many TensorFlow processes (`infer.run._sharded`), which write the same files a single run writes."""
    contract.check_pb_unchanged()
    root = (cache_root or contract.folder / CACHE_FOLDER) / "golden" / golden_key(contract, manifest)
    cached = cached_run(root)
    if cached is not None:
        log.info("golden outputs from the cache: %s", cached)
        return cached, "cache"
    log.info("computing golden outputs with TensorFlow on %s", contract.pb_path)
    if on_run is not None:
        on_run()
    scale = ScaleOptions(shards=workers, devices=tuple(range(workers))) if workers > 1 else None
    options = RunOptions(backend="tf", allow_host_ops=allow_host_ops)
    result = run_model(contract.path, manifest.root, root, options, scale, progress=progress)
    return result.folder, "tensorflow"
