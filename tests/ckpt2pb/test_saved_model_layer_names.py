"""A Keras layer named `probs` in a SavedModel: its name survives where the file holds it. A tf_keras SavedModel
keys the output `probs` and the frozen output is `probs:0`; Keras 3 keys it `output_0` and keeps the name only in
the scope of the ops (`functional_1/probs_1/Softmax`): inspect shows which op each key's tensor is computed by,
and `--outputs probs` names that output (not the layer's BiasAdd, which the closest names offered before)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ckpt2pb.inspection import inspect_model
from infer.freeze import FreezeOptions, freeze_model
from tests.atc_wrap.outputs import tf_outputs

_TF_KERAS_MODEL = """
import os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tensorflow as tf
inputs = tf.keras.Input((6,), name="features")
hidden = tf.keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
model = tf.keras.Model(inputs, tf.keras.layers.Dense(3, activation="softmax", name="probs")(hidden))
feed = np.random.default_rng(5).normal(size=(2, 6)).astype(np.float32)
np.savez(sys.argv[1] + ".npz", features=feed, probs=model(feed).numpy())
model.save(sys.argv[1])
"""


def _keras3_model(folder: Path, export: bool) -> tuple[Path, np.ndarray, np.ndarray]:
    import keras
    import tensorflow as tf

    inputs = keras.Input((6,), name="features")
    hidden = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(3, activation="softmax", name="probs")(hidden))
    feed = np.random.default_rng(5).normal(size=(2, 6)).astype(np.float32)
    path = folder / "saved"
    if export:
        model.export(str(path), verbose=False)
    else:
        tf.saved_model.save(model, str(path))
    return path, feed, np.asarray(model(feed))


@pytest.mark.parametrize("export", [False, True], ids=["tf.saved_model.save", "model.export"])
def test_a_keras_3_layer_name_names_its_signature_output(tmp_path: Path, export: bool) -> None:
    path, feed, expected = _keras3_model(tmp_path, export)
    report = inspect_model(path)
    [output] = [entry for entry in report.signature if entry.role == "output"]
    assert output.key == "output_0" and output.tensor == "Identity:0"
    assert output.computed_by.rpartition("/")[0].rpartition("/")[2] in ("probs", "probs_1"), output.computed_by
    assert output.computed_by.endswith("/Softmax")
    frozen = freeze_model(path, tmp_path / "model", FreezeOptions(outputs=("probs",), batch=2))
    assert [(s.name, frozen.contract.signature_keys[s.name]) for s in frozen.contract.outputs] == [
        ("Identity:0", "output_0")]
    [spec] = frozen.contract.inputs
    np.testing.assert_allclose(tf_outputs(frozen.contract, {spec.name: feed})[0], expected, rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None,
                    reason="tf_keras is not installed (pip install tf_keras: see docs/tf1-code.md)")
def test_a_tf_keras_saved_model_s_output_takes_its_layer_s_name(tmp_path: Path) -> None:
    path = tmp_path / "saved"
    subprocess.run([sys.executable, "-c", _TF_KERAS_MODEL, str(path)], check=True, capture_output=True,
                   env={**os.environ, "TF_USE_LEGACY_KERAS": "1"})
    report = inspect_model(path)
    assert [(e.key, e.tensor) for e in report.signature if e.role == "output"] == [("probs", "probs:0")]
    assert report.candidates[0].tensor == "probs:0" and report.candidates[0].signature_key == "probs"
    frozen = freeze_model(path, tmp_path / "model", FreezeOptions(outputs=("probs",), batch=2))
    assert [s.name for s in frozen.contract.outputs] == ["probs:0"]
    expected = np.load(str(path) + ".npz")
    got = tf_outputs(frozen.contract, {"features:0": expected["features"]})[0]
    np.testing.assert_allclose(got, expected["probs"], rtol=0, atol=1e-6)
