"""The stand-in runs tf2onnx's optimizer passes without the deep copy of the graph tf2onnx takes before each one
(to roll back a pass that raises); a pass that raises sends the graph through again with the rollback on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from binio.errors import InferError
from infer.contract import ModelContract, load_contract
from infer.convert._convert import ConvertOptions, convert_model
from tests.atc_wrap.outputs import onnx_outputs, tf_outputs

pytestmark = pytest.mark.slow


def _convert(contract: ModelContract, folder: Path) -> ModelContract:
    shutil.copytree(contract.folder, folder)
    # must_keep_origin_dtype: every op of the small CNN in fp32, so the model is TensorFlow's to within fp32 (its
    # Conv2D, which Ascend310 has no fp32 kernel for, let through)
    return convert_model(load_contract(folder / "model.json"),
                         ConvertOptions(target="onnx", precision_mode="must_keep_origin_dtype",
                                        allow_unsupported=True)).contract


@pytest.fixture
def rollbacks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether tf2onnx rolled back (deep-copied the graph before each pass), one entry per conversion."""
    import tf2onnx.optimizer

    seen: list[bool] = []
    original = tf2onnx.optimizer.optimize_graph

    def optimize_graph(graph: Any, catch_errors: bool = True, optimizers: Any = None) -> Any:
        seen.append(catch_errors)
        return original(graph, catch_errors, optimizers)

    monkeypatch.setattr(tf2onnx.optimizer, "optimize_graph", optimize_graph)
    return seen


def test_the_model_is_the_one_tf2onnx_makes_with_its_rollback(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                              rollbacks: list[bool],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tf2onnx.optimizer.identity_optimizer import IdentityOptimizer

    monkeypatch.setenv("TF2ONNX_CATCH_ERRORS", "TRUE")  # tf2onnx 1.17 reads any value as "off": set aside, put back
    fast = _convert(frozen_small_cnn, tmp_path / "fast")
    assert rollbacks == [False] and os.environ["TF2ONNX_CATCH_ERRORS"] == "TRUE"
    original = IdentityOptimizer._optimize
    failures: list[int] = []

    def fails_once(self: Any, graph: Any) -> Any:
        if not failures:
            failures.append(1)
            raise RuntimeError("a pass that fails once")
        return original(self, graph)

    monkeypatch.setattr(IdentityOptimizer, "_optimize", fails_once)
    guarded = _convert(frozen_small_cnn, tmp_path / "guarded")
    assert rollbacks == [False, False, True]  # failed in place, then converted again with the rollback
    assert fast.converted_path is not None and guarded.converted_path is not None
    assert fast.converted_path.read_bytes() == guarded.converted_path.read_bytes()


def test_a_pass_that_raises_is_skipped_as_tf2onnx_skips_it(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                           rollbacks: list[bool],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from tf2onnx.optimizer.identity_optimizer import IdentityOptimizer

    def broken(self: Any, graph: Any) -> Any:
        raise RuntimeError("a bug in one optimizer pass")

    monkeypatch.setattr(IdentityOptimizer, "_optimize", broken)
    contract = _convert(frozen_small_cnn, tmp_path / "converted")
    assert rollbacks == [False, True]  # failed in place, then converted again with the rollback
    feeds = {spec.name: np.random.default_rng(0).standard_normal(spec.static_shape()).astype(np.float32)
             for spec in contract.inputs}
    for got, want in zip(onnx_outputs(contract, feeds), tf_outputs(contract, feeds), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_failure_outside_the_optimizer_is_reported_once(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                          rollbacks: list[bool],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise KeyError("Conv2D")

    monkeypatch.setattr("tf2onnx.convert.process_tf_graph", failing)
    with pytest.raises(InferError, match=r"failed on this graph \(KeyError: 'Conv2D'\)"):
        _convert(frozen_small_cnn, tmp_path / "converted")
    assert calls == [1] and rollbacks == []
