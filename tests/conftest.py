"""Fixtures shared by every stage's tests. Models are built once per session: TensorFlow is slow to start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from atc_wrap.precision.modes import PrecisionMode
from ckpt2pb.logs import quiet_tensorflow_logs
from infer.contract import ModelContract
from tests.builders.frozen import freeze_by_hand
from tests.models import BuiltModel, build_small_cnn

quiet_tensorflow_logs()  # before any test imports TensorFlow

Copy = Callable[[ModelContract], ModelContract]
"""What the `copy_model` fixture gives: contract -> the contract of a copy in the test's tmp_path."""


@pytest.fixture(scope="session")
def small_cnn(tmp_path_factory: pytest.TempPathFactory) -> BuiltModel:
    return build_small_cnn(tmp_path_factory.mktemp("small_cnn"))


@pytest.fixture(scope="session")
def frozen_small_cnn(small_cnn: BuiltModel, tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    """model.pb + model.json of the small CNN, batch 2. Read-only: copy it (`copy_model`) before changing it."""
    return freeze_by_hand(small_cnn, tmp_path_factory.mktemp("frozen_small_cnn"))


@pytest.fixture
def copy_model(tmp_path: Path) -> Copy:
    """Copies a contract's folder into tmp_path and returns the copy's contract, for tests that change it."""
    import shutil

    from infer.contract import load_contract

    def copy(contract: ModelContract) -> ModelContract:
        target = tmp_path / contract.folder.name
        shutil.copytree(contract.folder, target)
        return load_contract(target / contract.path.name)

    return copy


def _convert_copy(contract: ModelContract, folder: Path, precision_mode: PrecisionMode) -> ModelContract:
    import shutil

    from infer.contract import load_contract
    from infer.convert._convert import ConvertOptions, convert_model

    shutil.copytree(contract.folder, folder)
    copied = load_contract(folder / contract.path.name)
    # allow_unsupported: on Ascend310 (the chip assumed) Conv2D has no fp32 kernel (its op_select_format), so
    # must_keep_origin_dtype is what ATC refuses; let through, the plan keeps every op fp32, which these fixtures want
    return convert_model(copied, ConvertOptions(target="onnx", precision_mode=precision_mode,
                                                allow_unsupported=True)).contract


@pytest.fixture(scope="session")
def onnx_small_cnn(frozen_small_cnn: ModelContract, tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    """A copy of `frozen_small_cnn` converted to the ONNX stand-in in fp32: must_keep_origin_dtype with
    --allow-unsupported, which keeps every op of this CNN in fp32 on Ascend310, its Conv2D included, which ATC would
    refuse (force_fp32 gives its Conv2D and MatMul fp16 inputs). Read-only."""
    return _convert_copy(frozen_small_cnn, tmp_path_factory.mktemp("onnx_small_cnn") / "model",
                         "must_keep_origin_dtype")


@pytest.fixture(scope="session")
def onnx_small_cnn_fp16(frozen_small_cnn: ModelContract, tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    """A copy of `frozen_small_cnn` converted to the ONNX stand-in emulating ATC's force_fp16. Read-only."""
    return _convert_copy(frozen_small_cnn, tmp_path_factory.mktemp("onnx_small_cnn_fp16") / "model", "force_fp16")
