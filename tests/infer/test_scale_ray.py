"""`infer run --engine ray`: the same shards as Ray tasks on a local Ray instance; skipped where Ray is missing."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.run import run_model
from infer.run._sharded import run_sharded
from infer.run.options import RunOptions, ScaleOptions
from infer.run.record import load_run
from tests.infer.run_data import FAKES, as_om
from tests.infer.scale_data import assert_same_outputs, scale_bins

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A local Ray with 2 CPUs and 2 pretend NPUs; its workers find the fake msame (they inherit this PATH)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", os.pathsep.join([str(FAKES), str(Path(sys.executable).parent), os.environ["PATH"]]))
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAKES), os.environ.get("PYTHONPATH")])))
        ray.init(num_cpus=2, resources={"NPU": 2}, include_dashboard=False, log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> DatasetManifest:
    return scale_bins(tmp_path_factory.mktemp("ray_bins"))


def test_stand_in_as_ray_tasks_is_byte_identical(local_ray: Any, onnx_small_cnn: ModelContract,
                                                 bins: DatasetManifest, tmp_path: Path) -> None:
    single = run_model(onnx_small_cnn.path, bins.root, tmp_path / "single")
    result = run_sharded(onnx_small_cnn.path, bins.root, tmp_path / "ray", RunOptions(), ScaleOptions(engine="ray"))
    assert_same_outputs(single.folder, result.folder)
    scaled = load_run(result.folder).scale_out
    assert scaled is not None and (scaled.engine, scaled.shard_count) == ("ray", 2)  # one shard per CPU
    assert all(" on " in s.device for s in scaled.shards)  # the node each ran on


def test_msame_shards_ask_for_npus_and_a_failed_one_is_retried(local_ray: Any, onnx_small_cnn: ModelContract,
                                                              bins: DatasetManifest, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKES), os.environ["PATH"]]))  # the driver checks msame too
    om = as_om(onnx_small_cnn, tmp_path / "om")
    single = run_model(onnx_small_cnn.path, bins.root, tmp_path / "single")
    (om.folder / "model.om.fail-once.shard-000").touch()
    result = run_sharded(om.path, bins.root, tmp_path / "ray", RunOptions(), ScaleOptions(engine="ray", shards=3))
    assert not (om.folder / "model.om.fail-once.shard-000").exists()
    assert_same_outputs(single.folder, result.folder)
    scaled = result.record.scale_out
    assert scaled is not None and [s.attempts for s in scaled.shards] == [2, 1, 1]
    assert all(s.device.startswith("msame device 0 on ") for s in scaled.shards)
