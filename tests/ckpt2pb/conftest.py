"""The freeze stage's models, built once per session (TensorFlow graph building is the slow part)."""

from __future__ import annotations

from typing import TypedDict

import pytest

from binio.texts import split_top_level
from infer.freeze import FreezeOptions, FreezeReport, freeze_model
from tests.models import (
    ReferenceModel,
    build_bert_like,
    build_dataset_fed,
    build_keras,
    build_resnet_like,
    build_saved_model,
    build_tf1_cond,
    build_tf2_saved_model,
)


@pytest.fixture(scope="session")
def resnet_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_resnet_like(tmp_path_factory.mktemp("resnet"))


@pytest.fixture(scope="session")
def dataset_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_dataset_fed(tmp_path_factory.mktemp("dataset_fed"))


@pytest.fixture(scope="session")
def bert_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_bert_like(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="session")
def saved_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_saved_model(tmp_path_factory.mktemp("saved_model"))


@pytest.fixture(scope="session")
def keras_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_keras(tmp_path_factory.mktemp("keras"))


@pytest.fixture(scope="session")
def keras_h5_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_keras(tmp_path_factory.mktemp("keras_h5"), suffix=".h5")


@pytest.fixture(scope="session")
def tf1_cond_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_tf1_cond(tmp_path_factory.mktemp("tf1_cond"))


@pytest.fixture(scope="session")
def tf2_saved_model(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_tf2_saved_model(tmp_path_factory.mktemp("tf2_saved_model"))


class _FreezeOutputs(TypedDict):
    outputs: list[str]


class FreezeArgs(_FreezeOutputs, total=False):
    """The arguments of freeze_model a test gives: outputs always, inputs and batch where the model needs them."""
    inputs: str
    batch: int


# How each model is frozen: the arguments a user would give.
FREEZE_ARGS: dict[str, FreezeArgs] = {
    "resnet_model": {"outputs": ["probs:0"], "batch": 2},
    "dataset_model": {"outputs": ["fc/logits:0", "predictions:0"], "inputs": "IteratorGetNext:0[?,8,8,3]:float32",
                      "batch": 4},
    "bert_model": {"outputs": ["span_logits", "class_probs"], "inputs": "input_ids[2,16],input_mask:0,segment_ids",
                   "batch": 2},
    "saved_model": {"outputs": ["scores"], "inputs": "features:0[3,6]"},
    "keras_model": {"outputs": ["probs:0"], "batch": 2},
    "keras_h5_model": {"outputs": ["probs"], "batch": 2},
    "tf1_cond_model": {"outputs": ["probs"], "batch": 2},
    "tf2_saved_model": {"outputs": ["probs"], "batch": 2},
}
MODEL_FIXTURES = tuple(FREEZE_ARGS)


@pytest.fixture(scope="session", params=MODEL_FIXTURES)
def frozen(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[ReferenceModel, FreezeReport]:
    """Each model frozen once, with the arguments in FREEZE_ARGS, into its own folder."""
    model: ReferenceModel = request.getfixturevalue(request.param)
    args = FREEZE_ARGS[request.param]
    report = freeze_model(model.path, tmp_path_factory.mktemp(f"frozen_{request.param}"), FreezeOptions(
        outputs=tuple(args["outputs"]), inputs=tuple(split_top_level(str(args.get("inputs", "")))),
        batch=args.get("batch")))
    return model, report
