"""Run folders written by hand in msame's layout, so comparison is tested without running any model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from binio.binfile import write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from binio.spec import TensorSpec
from infer.contract import ModelContract, SourceInfo
from infer.run.layout import output_file_name


def write_dataset(root: Path, *, batch: int, samples: int, names: list[str] | None = None) -> DatasetManifest:
    """One input `x:0` float32 (batch, 3) of zeros, split into files; the last file padded. `names`: the files the
    samples were made from, as dump-bin records an image folder's."""
    files = []
    count = -(-samples // batch)
    for index in range(count):
        name = bin_file_name(index)
        sha = write_bin(root / "x" / name, np.zeros((batch, 3), dtype=np.float32))
        files.append(BinEntry(name=name, digest=sha, rows=min(batch, samples - index * batch)))
    preprocessing = {} if names is None else {"order": "natural (numbers in names compared as numbers)",
                                              "files": names}
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(batch, 3), layout="ND", files=tuple(files),
                         source="" if names is None else str(root.parent / "photos"), preprocessing=preprocessing)
    return DatasetManifest(root=root, batch=batch, samples=samples, inputs=(item,)).save()


def write_contract(folder: Path, outputs: tuple[TensorSpec, ...],
                   converted_outputs: tuple[TensorSpec, ...] | None = None) -> ModelContract:
    """A contract whose outputs are `outputs`, converted (the converted model's outputs may differ in dtype, and
    default to `outputs`); no real pb or converted model behind it."""
    from infer.contract import ConvertedInfo

    inputs = (TensorSpec("x:0", "float32", (None, 3)),)
    converted = ConvertedInfo(target="onnx", path="model.onnx", sha256="1" * 64, inputs=inputs,
                              outputs=converted_outputs or outputs, precision_mode="force_fp16")
    contract = ModelContract(path=folder / "model.json", pb="model.pb", pb_sha256="0" * 64,
                             source=SourceInfo(path="", kind="pb", tf_version="", frozen_with_tf=""),
                             inputs=inputs, outputs=outputs, converted=converted)
    folder.mkdir(parents=True, exist_ok=True)
    return contract.save()


def write_run(folder: Path, outputs: list[np.ndarray], batch: int) -> Path:
    """`outputs[i]` holds every batch of output i stacked, padding rows included: (files·batch, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, stacked in enumerate(outputs):
        for file_index in range(stacked.shape[0] // batch):
            stem = bin_file_name(file_index)[:-4]
            write_bin(folder / output_file_name(stem, index), stacked[file_index * batch:(file_index + 1) * batch])
    return folder
