"""Fixtures for comparing real models: bins for the small CNN, a TF golden run, a variant with one layer perturbed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from atc_wrap.precision.modes import PrecisionMode
from binio.binfile import sha256_file, write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from ckpt2pb.protobuf import read_graph_def
from infer.contract import ModelContract, load_contract

CNN_SAMPLES, CNN_BATCH = 5, 2  # three files; the last holds one real sample and one row of padding


def write_image_bins(root: Path, *, samples: int = CNN_SAMPLES, batch: int = CNN_BATCH, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    files = []
    for index in range(-(-samples // batch)):
        rows = min(batch, samples - index * batch)
        images = np.zeros((batch, 8, 8, 3), dtype=np.float32)
        images[:rows] = rng.normal(size=(rows, 8, 8, 3))
        name = bin_file_name(index)
        files.append(BinEntry(name=name, digest=write_bin(root / "images" / name, images), rows=rows))
    item = InputManifest(tensor="images:0", folder="images", dtype="float32", shape=(batch, 8, 8, 3), layout="NHWC",
                         files=tuple(files))
    DatasetManifest(root=root, batch=batch, samples=samples, inputs=(item,)).save()
    return root


@pytest.fixture(scope="session")
def cnn_bins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_image_bins(tmp_path_factory.mktemp("cnn_bins"))


@pytest.fixture(scope="session")
def cnn_golden(frozen_small_cnn: ModelContract, cnn_bins: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TensorFlow's outputs for `cnn_bins`: a run folder."""
    from infer.run import run_model
    from infer.run.options import RunOptions

    return run_model(frozen_small_cnn.path, cnn_bins, tmp_path_factory.mktemp("cnn_golden"),
                     RunOptions(backend="tf")).folder


def converted_with_edited_kernel(frozen: ModelContract, folder: Path, edit: Callable[[np.ndarray], np.ndarray],
                                 precision_mode: PrecisionMode) -> ModelContract:
    """A copy of the small CNN in `folder` whose ONNX model was converted from a pb with the conv kernel edited by
    `edit`; model.pb stays the original, so TensorFlow (and the emulation) compute the healthy model and every
    tensor of the converted one from the conv layer on differs."""
    import tensorflow as tf

    from infer.convert._convert import ConvertOptions, convert_model

    shutil.copytree(frozen.folder, folder)
    original = load_contract(folder / "model.json")
    graph_def = read_graph_def(original.pb_path)
    kernel = next(node for node in graph_def.node if node.name == "conv/kernel")
    values = tf.make_ndarray(kernel.attr["value"].tensor)
    kernel.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(edit(values).astype(values.dtype)))
    (folder / "edited.pb").write_bytes(graph_def.SerializeToString())
    staged = replace(original, pb="edited.pb", pb_sha256=sha256_file(folder / "edited.pb")).save()
    converted = convert_model(staged, ConvertOptions(target="onnx", precision_mode=precision_mode)).contract
    (folder / "edited.pb").unlink()
    return replace(converted, pb=original.pb, pb_sha256=original.pb_sha256).save()


@pytest.fixture(scope="session")
def perturbed_small_cnn(frozen_small_cnn: ModelContract, tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    """The small CNN converted (force_fp32) from a pb with the conv kernel negated and noised. Read-only."""
    noise = np.random.default_rng(1)
    return converted_with_edited_kernel(
        frozen_small_cnn, tmp_path_factory.mktemp("perturbed") / "model",
        lambda values: -values + noise.normal(scale=0.3, size=values.shape).astype(values.dtype), "force_fp32")
